// tsconfig.json (project references) and the root .env.example (ports and URLs).
import { apps, namesOf, serviceList } from '../lib.mjs'
import { read, section } from './common.mjs'

export function tsconfig() {
  const refs = ['packages/platform', 'packages/client', ...apps.map((s) => `services/${s.name}`)]
  return `{\n  "files": [],\n  "references": [\n${refs.map((r) => `    { "path": "${r}" }`).join(',\n')}\n  ]\n}\n`
}

export function envExample() {
  const file = '.env.example'
  return section(
    read(file),
    'ports',
    [
      ...apps.map((s) => `${namesOf(s).env.port}=${s.port}`),
      ...serviceList.services.map((s) => `${namesOf(s).env.url}=http://127.0.0.1:${s.port}`),
    ],
    file,
  )
}
