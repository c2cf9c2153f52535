// `npm run new-service -- <name>`: a new resource service that builds, migrates, starts under
// `npm start` and answers /health/ready, with nothing copied by hand (docs/adding-a-service.md).
//   1. services/<name>/ from scripts/new-service/template/ (package.json, tsconfig.json,
//      jest.config.js, README.md, src/{server,app,config}.ts, src/db/migrate.ts,
//      src/db/migrations/{index,0001-base}.ts, test/int/{contract,rls}.int.test.ts)
//   2. its entry in packages/platform/services.json: the next free port, one path family named after
//      it (a planned family of that name becomes its own, with its resource type)
//   3. node scripts/generate.mjs (tsconfig references, .env.example, Compose, Kubernetes, broker users)
//   4. pnpm install, which links the new package and records it in pnpm-lock.yaml; --no-install
//      leaves that to the caller (the scaffold test links it itself, offline).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TEMPLATE = path.join(root, 'scripts', 'new-service', 'template')
const LIST = path.join(root, 'packages', 'platform', 'services.json')
/** What every service starts with beside the platform, at the platform's own versions. */
const DEPENDENCIES = ['@sinclair/typebox', 'fastify', 'knex', 'pino']

function fail(message) {
  console.error(`new-service: ${message}`)
  process.exit(1)
}

const args = process.argv.slice(2)
const install = !args.includes('--no-install')
const names = args.filter((a) => !a.startsWith('--'))
if (names.length !== 1) fail('usage: npm run new-service -- <name> [--no-install]')
const name = names[0]

const naming = createRequire(import.meta.url)('../packages/platform/naming.cjs')
let serviceNames
try {
  serviceNames = naming.namesOf({ name })
} catch (err) {
  fail(err.message)
}
const list = JSON.parse(readFileSync(LIST, 'utf8'))
const apps = [list.gateway, ...list.services]
if (apps.some((s) => s.name === name)) fail(`${name} is already in packages/platform/services.json`)
const dir = path.join(root, 'services', name)
if (existsSync(dir)) fail(`services/${name} already exists`)
if (list.services.some((s) => Object.hasOwn(s.families, name)))
  fail(`the path family ${name} belongs to another service`)

// A planned area of that name (answered 501 until now) is this service's from today.
const planned = (list.planned ?? []).find((p) => p.family === name)
const resourceType = planned?.resource_type ?? name.replace(/-/g, '_')
const port = Math.max(...apps.map((s) => s.port)) + 1
list.planned = (list.planned ?? []).filter((p) => p !== planned)
list.services.push({
  name,
  port,
  families: { [name]: resourceType },
  replicas: { min: 2, max: 4 },
  list_path: `/${name}`,
})

const platformPkg = JSON.parse(readFileSync(path.join(root, 'packages', 'platform', 'package.json'), 'utf8'))
const vars = {
  name,
  Name: name.replace(/(^|-)([a-z0-9])/g, (_, __, c) => c.toUpperCase()),
  ENV: serviceNames.envPrefix,
  schema: serviceNames.schema,
  appRole: `${serviceNames.loginRole}_app`,
  port: String(port),
  family: name,
  resourceType,
  dependencies: DEPENDENCIES.map((d) => `    "${d}": "${platformPkg.dependencies[d]}"`).join(',\n'),
}
const fill = (text) =>
  text.replace(/\{\{(\w+)\}\}/g, (m, k) => {
    if (!Object.hasOwn(vars, k)) fail(`template placeholder ${m} has no value`)
    return vars[k]
  })

const files = (from) =>
  readdirSync(from, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(from, e.name)) : [path.join(from, e.name)],
  )
for (const file of files(TEMPLATE)) {
  const to = path.join(dir, path.relative(TEMPLATE, file).replace(/\.tmpl$/, ''))
  mkdirSync(path.dirname(to), { recursive: true })
  writeFileSync(to, fill(readFileSync(file, 'utf8')))
  console.log(`wrote ${path.relative(root, to)}`)
}

const prettier = await import('prettier')
const options = (await prettier.resolveConfig(LIST)) ?? {}
writeFileSync(LIST, await prettier.format(JSON.stringify(list, null, 2), { ...options, filepath: LIST }))
console.log(`added ${name} to packages/platform/services.json (port ${port}, /api/${name}: ${resourceType})`)

const step = (cmd, cmdArgs) => {
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) fail(`${cmd} ${cmdArgs.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`)
}
step(process.execPath, [path.join(root, 'scripts', 'generate.mjs')])
if (install) step(process.execPath, [path.join(root, 'scripts', 'pnpm.mjs'), 'install', '--prefer-offline'])

console.log(`
services/${name} is ready: npm run build, then npm start (it migrates and starts it with the rest).
Next: routes under src/routes, their tables in a new migration, its README; npm run openapi once
routes exist. Events: docs/adding-a-service.md.`)
