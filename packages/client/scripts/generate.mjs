// Writes packages/client/src/schema.ts from docs/openapi.json: byte for byte what the CLI
// `openapi-typescript docs/openapi.json -o src/schema.ts` writes.
//   node packages/client/scripts/generate.mjs            rewrite src/schema.ts (npm run openapi)
//   node packages/client/scripts/generate.mjs --stdout   print it instead (test/schema.test.ts)
// Plain ESM, no build: openapi-typescript's dependencies are ESM only, which Jest cannot load on
// Node 20, so the test runs this file in a child process rather than importing the generator.
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'

const near = (p) => fileURLToPath(new URL(p, import.meta.url))
export const openapiPath = near('../../../docs/openapi.json')
export const schemaPath = near('../src/schema.ts')

/** The TypeScript source of schema.ts for an OpenAPI document (the CLI's defaults and header). */
export async function generateSchema(doc, { silent = false } = {}) {
  return COMMENT_HEADER + astToString(await openapiTS(doc, { silent }))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const toStdout = process.argv.includes('--stdout')
    const source = await generateSchema(JSON.parse(readFileSync(openapiPath, 'utf8')), { silent: toStdout })
    if (toStdout) process.stdout.write(source)
    else {
      writeFileSync(schemaPath, source)
      console.log(`wrote ${path.relative(process.cwd(), schemaPath)}`)
    }
  } catch (err) {
    console.error(err.stack ?? err.message)
    process.exit(1)
  }
}
