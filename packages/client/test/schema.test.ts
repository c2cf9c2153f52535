// src/schema.ts is generated: it must be what openapi-typescript makes of docs/openapi.json today.
// The generator runs in a child process (scripts/generate.mjs --stdout): openapi-typescript's
// dependencies are ESM only, which Jest cannot load on Node 20. Nothing is written.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'

const pkg = path.resolve(__dirname, '..')

/** The first line where two texts differ, to point at without printing 100 KB. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n')
  const b = generated.split('\n')
  let at = 0
  while (at < Math.max(a.length, b.length) && a[at] === b[at]) at++
  return `line ${at + 1}: committed ${JSON.stringify(a[at])}, generated ${JSON.stringify(b[at])}`
}

it('src/schema.ts is up to date with docs/openapi.json', () => {
  const generated = execFileSync(process.execPath, [path.join(pkg, 'scripts/generate.mjs'), '--stdout'], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  const committed = readFileSync(path.join(pkg, 'src/schema.ts'), 'utf8')
  if (committed !== generated) {
    throw new Error(
      'packages/client/src/schema.ts is stale: run `npm run openapi` (or ' +
        '`node packages/client/scripts/generate.mjs`) and commit it. ' +
        `First difference at ${firstDifference(committed, generated)}`,
    )
  }
})
