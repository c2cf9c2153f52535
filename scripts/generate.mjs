// Writes what must be literal from packages/platform/services.json (the one list of services), with
// the names packages/platform/naming.cjs makes of each entry; one module per target:
//   generate/env.mjs        tsconfig.json (project references), .env.example (ports and URLs)
//   generate/compose.mjs    deploy/compose/compose.yaml (x-env ports and URLs, migrate-<name> and
//                           <name> entries with their assertion keys and limits, broker-users'
//                           passwords), deploy/compose/.env.example (each service's database and
//                           broker passwords and event signing key, the assertion keys)
//   generate/k8s.mjs        deploy/k8s/{configmap,secret.example,kustomization}.yaml,
//                           deploy/k8s/services/<name>/{values,kustomization}.yaml (+ patch.yaml and
//                           the service's own objects if present; its assertion keys as a patch)
//   generate/networkpolicy.mjs  deploy/k8s/networkpolicy.yaml (ingress, monitoring, egress)
//   generate/rabbitmq.mjs   deploy/rabbitmq/definitions.json (the broker topology, users and permissions)
//   generate/contracts.mjs  packages/platform/src/contracts/index.ts (each publisher's event contracts)
//   generate/internal-api.mjs  packages/platform/src/internal-api/index.ts (each callee's internal
//                           endpoints, and whom each service calls)
//   Dockerfile              nothing: it reads services.json and naming.cjs at build and run time
//
//   node scripts/generate.mjs          rewrite the files (npm run generate)
//   node scripts/generate.mjs --check  exit 1 naming every committed file that differs (npm test, deploy checks)
//
// Sections inside hand-written files sit between `BEGIN GENERATED <id>` and `END GENERATED <id>` lines.
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { apps, root } from './lib.mjs'
import { read } from './generate/common.mjs'
import { compose, composeEnvExample } from './generate/compose.mjs'
import { CONTRACTS_INDEX, contractsIndex } from './generate/contracts.mjs'
import { envExample, tsconfig } from './generate/env.mjs'
import { INTERNAL_API_INDEX, internalApiIndex } from './generate/internal-api.mjs'
import { configMap, k8sService, kustomization, networkPolicy, secretExample } from './generate/k8s.mjs'
import { definitions } from './generate/rabbitmq.mjs'

/** Every generated file: path (from the root) -> content, formatted the way prettier keeps it. */
export async function generate() {
  const files = {
    'tsconfig.json': tsconfig(),
    '.env.example': envExample(),
    'deploy/compose/compose.yaml': compose(),
    'deploy/compose/.env.example': composeEnvExample(),
    'deploy/k8s/configmap.yaml': configMap(),
    'deploy/k8s/secret.example.yaml': secretExample(),
    'deploy/k8s/kustomization.yaml': kustomization(),
    'deploy/k8s/networkpolicy.yaml': networkPolicy(),
    'deploy/rabbitmq/definitions.json': definitions(),
    [CONTRACTS_INDEX]: contractsIndex(),
    [INTERNAL_API_INDEX]: internalApiIndex(),
    ...Object.assign({}, ...apps.map(k8sService)),
  }
  const prettier = await import('prettier')
  for (const [file, text] of Object.entries(files)) {
    const filepath = path.join(root, file)
    const info = await prettier.getFileInfo(filepath, { ignorePath: path.join(root, '.prettierignore') })
    if (info.ignored || !info.inferredParser) continue
    const options = (await prettier.resolveConfig(filepath)) ?? {}
    files[file] = await prettier.format(text, { ...options, filepath })
  }
  return files
}

/** The generated files whose content differs from `readFile(file)` (the committed one by default), or that are missing. */
export async function stale(readFile = read) {
  const files = await generate()
  return Object.keys(files).filter((f) => readFile(f) !== files[f])
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--check')) {
    const list = await stale()
    for (const f of list) console.error(`${f} is stale: run node scripts/generate.mjs`)
    if (list.length) process.exit(1)
    console.log('generated files match packages/platform/services.json')
  } else {
    for (const [file, text] of Object.entries(await generate())) {
      if (read(file) === text) continue
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
      writeFileSync(path.join(root, file), text)
      console.log(`wrote ${file}`)
    }
  }
}
