// `npm run openapi`: writes docs/openapi.json, the API contract under review, and what is generated
// from it (the typed client's types, the .http collection). Builds, then builds
// every service's app in-process (its buildApp, no listening, no connection: knex connects
// lazily and the broker is never started), takes the document Fastify swagger generates from its
// route schemas, and merges them with the gateway's own merge function: the same document
// `GET /api/openapi.json` serves (the e2e suite fails when they differ).
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { build, root, serviceList } from './lib.mjs'

const out = path.join(root, 'docs', 'openapi.json')

try {
  build()
  // Each service resolves its own dependencies (the root package has none of them).
  const gatewayRequire = createRequire(path.join(root, 'services', 'gateway', 'package.json'))
  const { Amqp, createDb, createLogger, internalClients, readVersion } = gatewayRequire('@clinic/platform')
  const { mergeOpenApi } = gatewayRequire('./dist/routes/docs.js')
  const logger = createLogger({ service: 'openapi', level: 'silent' })
  const version = readVersion()

  const docs = {}
  for (const { name } of serviceList.services) {
    const { buildApp } = createRequire(path.join(root, 'services', name, 'package.json'))('./dist/app.js')
    // Never used: nothing here runs a query or publishes.
    const knex = createDb('postgres://openapi@127.0.0.1:1/unused', { schema: name.replace(/-/g, '_') })
    const amqp = new Amqp({ url: 'amqp://127.0.0.1:1', log: logger, name: 'openapi' })
    // Its typed clients of the services it calls, never called either.
    const services = internalClients(name, {
      signer: null,
      timeoutMs: 1,
      baseUrl: () => 'http://127.0.0.1:1',
    })
    const deps = { logger, knex, amqp, version, assertionKeys: new Map(), serviceSigner: null, services }
    const app = await buildApp(deps)
    try {
      await app.ready()
      docs[name] = app.swagger()
    } finally {
      await app.close()
      await knex.destroy()
    }
  }

  const json = JSON.stringify(mergeOpenApi(version, docs), null, 2)
  // Formatted as `prettier --check` wants it, so the lint step and the diff agree.
  const prettier = await import('prettier')
  const options = { ...(await prettier.resolveConfig(out)), filepath: out }
  writeFileSync(out, await prettier.format(json, options))
  console.log(`wrote ${path.relative(root, out)} (${Object.keys(docs).join(', ')})`)
  // What is generated from it: the typed client's types.
  const client = await import('../packages/client/scripts/generate.mjs')
  writeFileSync(client.schemaPath, await client.generateSchema(JSON.parse(json), { silent: true }))
  console.log(`wrote ${path.relative(root, client.schemaPath)}`)
  // ... and the .http collection (VS Code REST Client, JetBrains HTTP Client).
  const http = await import('./http-collection.mjs')
  writeFileSync(http.httpPath, http.httpCollection(JSON.parse(json)))
  console.log(`wrote ${path.relative(root, http.httpPath)}`)
} catch (err) {
  console.error(err.stack ?? err.message)
  process.exit(1)
}
