import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  createTestDatabase,
  dropTestDatabase,
  freePort,
  newDbRolePrefix,
  removeDbRoles,
  waitFor,
} from '@clinic/platform/testing'
import { namesOf } from '../../packages/platform/naming.cjs'
import { bareCopy } from './bare-copy'

/**
 * `npm run new-service -- demo-x` in a copy of the repository (the checkout is never touched), then
 * demo-x grown as a developer grows a service: it calls patients, publishes an event, has scopes of
 * its own on its operations and serves a FHIR type. As made, it builds with the rest (tsc -b
 * through the generated references), passes the deploy checks and its own tests (the template's
 * service contract and row-level security), and nothing outside its folder changed but its
 * services.json entry and the generated files. Grown, it builds, passes the deploy checks, its own
 * tests (the same two and the fixture's flags test: patients asked, the event on the broker), the
 * gateway's route-table test and the e2e scope suite's reading of DESIGN on the regenerated
 * document, migrates and answers /health/ready as `npm start` runs it; and the files changed
 * outside its folder, but what `npm run generate` and `npm run openapi` write, are at most 3, each
 * named in docs/adding-a-service.md's hand-edit list.
 */
const ROOT = path.resolve(__dirname, '../..')
const NAME = 'demo-x'
/** The new files of the grown service (and its contracts file), as `<path>.fixture`. */
const FIXTURES = path.join(__dirname, 'fixtures', NAME)
/** Tracked files new-service changes outside services/<name>/: its entry, and what the generator writes. */
const CHANGED_OUTSIDE = [
  '.env.example',
  'deploy/compose/.env.example',
  'deploy/compose/compose.yaml',
  'deploy/k8s/configmap.yaml',
  'deploy/k8s/kustomization.yaml',
  'deploy/k8s/networkpolicy.yaml',
  'deploy/k8s/secret.example.yaml',
  'deploy/rabbitmq/definitions.json',
  'packages/platform/services.json',
  'tsconfig.json',
]
/** At most this many hand edits outside the service's folder as it grows (docs/adding-a-service.md). */
const MOST_HAND_EDITS = 3

/**
 * The working tree without .git (git in the copy would reach the real repository) and without the
 * installed packages: the root node_modules is linked, each package's own node_modules (pnpm's
 * relative links) copied as links, so every workspace package resolves inside the copy. dist/ and
 * the build info come along with their times, so tsc -b builds only what changed. A repository of
 * its own is made of the copy as it is, so `git status` there names every file changed after.
 */
function copyOfRepo(): string {
  const copy = mkdtempSync(path.join(tmpdir(), 'clinic-new-service-'))
  const skip = new Set(['.git', 'node_modules', 'var'].map((p) => path.join(ROOT, p)))
  cpSync(ROOT, copy, {
    recursive: true,
    preserveTimestamps: true,
    verbatimSymlinks: true,
    filter: (src) => !skip.has(src),
  })
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'))
  const git = (...args: string[]) => {
    const r = spawnSync('git', args, { cwd: copy, encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  git('init', '-q')
  writeFileSync(path.join(copy, '.git/info/exclude'), '/node_modules\n')
  git('add', '-A')
  git(
    '-c',
    'user.name=test',
    '-c',
    'user.email=test@example.invalid',
    'commit',
    '-q',
    '--no-gpg-sign',
    '-m',
    'copy',
  )
  return copy
}

/** Every file changed, added or removed in the copy since it was made (git status, untracked too). */
function changedIn(copy: string): string[] {
  const r = spawnSync('git', ['status', '--porcelain=v1', '-z', '--untracked-files=all'], {
    cwd: copy,
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`git status: ${r.stderr}`)
  return r.stdout
    .split('\0')
    .filter(Boolean)
    .map((entry) => entry.slice(3))
    .sort()
}

const dependenciesOf = (file: string): Record<string, string> =>
  JSON.parse(readFileSync(file, 'utf8')).dependencies ?? {}

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)],
  )

/**
 * The files of docs/adding-a-service.md's hand-edit list (its numbered, bold paths under "The hand
 * edits outside `services/<name>/`"), for the service `name`.
 */
function handEditList(name: string): string[] {
  const doc = readFileSync(path.join(ROOT, 'docs/adding-a-service.md'), 'utf8')
  const section = /^## The hand edits outside[^\n]*\n([\s\S]*?)^## /m.exec(doc)?.[1] ?? ''
  return [...section.matchAll(/^\d+\. \*\*`([^`]+)`\*\*/gm)].map((m) => m[1]!.replaceAll('<name>', name))
}

/** `from` -> `to` in a file of the copy, once; fails naming the file when `from` is not there. */
function edit(copy: string, file: string, from: string, to: string) {
  const text = readFileSync(path.join(copy, file), 'utf8')
  if (!text.includes(from)) throw new Error(`${file}: no ${JSON.stringify(from)} to change`)
  writeFileSync(path.join(copy, file), text.replace(from, to))
}
/** A JSON file of the copy changed by `change`, written back (prettier formats it after). */
function editJson<T>(copy: string, file: string, change: (json: T) => void) {
  const json = JSON.parse(readFileSync(path.join(copy, file), 'utf8')) as T
  change(json)
  writeFileSync(path.join(copy, file), `${JSON.stringify(json, null, 2)}\n`)
}

/**
 * What a developer writes to grow demo-x: the fixture's new files (a flags table, its repository,
 * domain, routes and test, and the contracts file), and these edits of what new-service made and of
 * the platform's list and the gateway's route table. The edits to JSON are formatted after (prettier).
 */
function grow(copy: string) {
  for (const file of filesUnder(FIXTURES)) {
    const to = path.join(copy, path.relative(FIXTURES, file).replace(/\.fixture$/, ''))
    mkdirSync(path.dirname(to), { recursive: true })
    cpSync(file, to)
  }
  const service = `services/${NAME}`
  // Inside its folder: the relay on, the callee's URL, the new migration, the routes.
  edit(copy, `${service}/src/server.ts`, 'outbox: false,', 'outbox: true,')
  edit(
    copy,
    `${service}/src/config.ts`,
    "DEMO_X_PORT: v.servicePort('demo-x'),",
    "DEMO_X_PORT: v.servicePort('demo-x'),\n  PATIENTS_URL: v.serviceUrl('patients'),",
  )
  const migrations = `${service}/src/db/migrations/index.ts`
  edit(
    copy,
    migrations,
    "import { base } from './0001-base'",
    "import { base } from './0001-base'\nimport { flags } from './0002-flags'",
  )
  edit(copy, migrations, '[base(SCHEMA, APP_ROLE)]', '[base(SCHEMA, APP_ROLE), flags(APP_ROLE)]')
  edit(
    copy,
    `${service}/src/app.ts`,
    "from '@clinic/platform'\n",
    "from '@clinic/platform'\nimport { FlagsRepository } from './db/flags-repository'\n" +
      "import type { PatientDirectory } from './domain/directories'\nimport { flagRoutes } from './routes/flags'\n",
  )
  edit(
    copy,
    `${service}/src/app.ts`,
    '  return app\n}',
    '  const patients: PatientDirectory = { find: deps.services.patients.lookUp }\n' +
      '  await app.register(flagRoutes, { store: new FlagsRepository(deps.knex), patients })\n' +
      '  return app\n}',
  )
  // Its routes are written like every service's (pnpm add would also record it in pnpm-lock.yaml).
  const typebox = '@fastify/type-provider-typebox'
  editJson<{ dependencies: Record<string, string> }>(copy, `${service}/package.json`, (pkg) => {
    pkg.dependencies = Object.fromEntries(
      Object.entries({
        ...pkg.dependencies,
        [typebox]: dependenciesOf(path.join(copy, 'services/patients/package.json'))[typebox]!,
      }).sort(([a], [b]) => a.localeCompare(b)),
    )
  })
  // Outside it, the hand edits: its entry (scopes, calls, publishes, fhir) ...
  editJson<{ services: Array<{ name: string }> }>(copy, 'packages/platform/services.json', (list) => {
    const entry = list.services.find((s) => s.name === NAME)!
    Object.assign(entry, {
      scopes: ['demo_x:read', 'demo_x:write'],
      calls: ['patients'],
      publishes: ['demo_x.flag.created'],
      fhir: { Flag: 'demo_x:read' },
    })
  })
  // ... its contracts file (from the fixtures) and its operations' scopes in the gateway's route table.
  edit(
    copy,
    'services/gateway/src/scopes.ts',
    'export const OPERATION_SCOPES: Readonly<Record<string, Scope>> = {\n',
    'export const OPERATION_SCOPES: Readonly<Record<string, Scope>> = {\n' +
      "  'POST /demo-x/flags': 'demo_x:write',\n" +
      "  'GET /demo-x/flags/{id}': 'demo_x:read',\n\n",
  )
}

/** What `npm run generate` writes, and `npm run openapi` (the document, the client's types, the .http collection). */
function generatedFiles(copy: string): string[] {
  const script = path.join(copy, 'var/generated-files.mjs')
  mkdirSync(path.dirname(script), { recursive: true })
  writeFileSync(
    script,
    `import path from 'node:path'
const root = ${JSON.stringify(copy)}
const { generate } = await import(path.join(root, 'scripts/generate.mjs'))
const { schemaPath } = await import(path.join(root, 'packages/client/scripts/generate.mjs'))
const { httpPath } = await import(path.join(root, 'scripts/http-collection.mjs'))
const openapi = [path.join(root, 'docs/openapi.json'), schemaPath, httpPath].map((f) => path.relative(root, f))
console.log(JSON.stringify([...Object.keys(await generate()), ...openapi]))
`,
  )
  const r = spawnSync(process.execPath, [script], { cwd: copy, encoding: 'utf8', timeout: 60_000 })
  if (r.status !== 0) throw new Error(`listing the generated files: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

describe(`new-service ${NAME} in a copy of the repository, as made and grown`, () => {
  let copy: string
  const env = { PATH: process.env.PATH, HOME: process.env.HOME }
  // Each step is bounded, so a stuck one fails the test with its output instead of hanging it.
  const step = (cmd: string, args: string[], timeoutMs: number) => {
    const r = spawnSync(cmd, args, { cwd: copy, env, encoding: 'utf8', timeout: timeoutMs })
    const out = `${r.stdout}\n${r.stderr}${r.error ? `\n${r.error.message}` : ''}`
    return { status: r.status, out, stdout: r.stdout }
  }
  /** `step` without blocking: independent checks run side by side (each bounded the same way). */
  const stepAsync = (cmd: string, args: string[], timeoutMs: number) =>
    new Promise<{ status: number | null; out: string }>((resolve) => {
      const child = spawn(cmd, args, { cwd: copy, env, timeout: timeoutMs })
      const out: string[] = []
      for (const s of [child.stdout, child.stderr]) s.on('data', (d: Buffer) => out.push(d.toString()))
      child.on('error', (err) => out.push(`\n${err.message}`))
      child.on('close', (status) => resolve({ status, out: out.join('') }))
    })
  const bin = (b: string) => path.join(copy, 'node_modules/.bin', b)
  const read = (f: string) => readFileSync(path.join(copy, f), 'utf8')
  /** The copy's own tests matching `patterns` (its jest config: a database and vhost of their own). */
  const jestInCopy = (patterns: string[]) =>
    step(
      bin('jest'),
      ['--ci', '--selectProjects', `services/${NAME}`, 'services/gateway', '--testPathPatterns', ...patterns],
      240_000,
    )

  beforeAll(() => {
    copy = copyOfRepo()
  })
  afterAll(() => {
    if (copy) rmSync(copy, { recursive: true, force: true })
  })

  it(
    'makes a service that builds, passes the deploy checks and its own tests, editing nothing by hand',
    async () => {
      // --no-install: pnpm would write into the real node_modules, which the copy links to.
      const made = step('npm', ['run', '-s', 'new-service', '--', NAME, '--no-install'], 60_000)
      expect(made).toMatchObject({ status: 0 })
      const dir = path.join(copy, 'services', NAME)

      // What pnpm install would link, offline: the scaffold's dependencies are a subset of patients'.
      const patients = path.join(copy, 'services/patients')
      expect(Object.keys(dependenciesOf(path.join(patients, 'package.json')))).toEqual(
        expect.arrayContaining(Object.keys(dependenciesOf(path.join(dir, 'package.json')))),
      )
      cpSync(path.join(patients, 'node_modules'), path.join(dir, 'node_modules'), {
        recursive: true,
        verbatimSymlinks: true,
      })

      const outside = changedIn(copy).filter((f) => !f.startsWith(`services/${NAME}/`))
      expect(outside.filter((f) => !f.startsWith(`deploy/k8s/services/${NAME}/`))).toEqual(CHANGED_OUTSIDE)
      expect(outside.filter((f) => f.startsWith(`deploy/k8s/services/${NAME}/`))).toEqual([
        `deploy/k8s/services/${NAME}/kustomization.yaml`,
        `deploy/k8s/services/${NAME}/values.yaml`,
      ])
      expect(JSON.parse(read('packages/platform/services.json')).services.at(-1)).toMatchObject({
        name: NAME,
        families: { [NAME]: 'demo_x' },
        list_path: `/${NAME}`,
      })
      expect(read('tsconfig.json')).toContain(`"services/${NAME}"`)
      expect(read('deploy/compose/compose.yaml')).toContain(`migrate-${NAME}:`)
      expect(read('deploy/rabbitmq/definitions.json')).toContain(`"${namesOf(NAME).brokerUser}"`)
      expect(read('deploy/k8s/networkpolicy.yaml')).toContain(`name: ${NAME}-from-gateway`)
      expect(readdirSync(path.join(dir, 'test/int')).sort()).toEqual([
        'contract.int.test.ts',
        'rls.int.test.ts',
      ])

      // Independent of each other: formatted, built, the deploy checks.
      const [formatted, built, checked] = await Promise.all([
        stepAsync(bin('prettier'), ['--check', `services/${NAME}`], 60_000),
        stepAsync(bin('tsc'), ['-b'], 240_000),
        stepAsync('bash', ['deploy/check.sh'], 180_000),
      ])
      expect(formatted).toMatchObject({ status: 0 })
      expect(built).toMatchObject({ status: 0 })
      expect(existsSync(path.join(dir, 'dist/server.js'))).toBe(true)
      expect(checked).toMatchObject({ status: 0 })
      expect(checked.out).toContain(`ok   deploy/k8s/services/${NAME} (`)
      // The template's tests: the service contract and row-level security, on the service as made.
      const tested = jestInCopy([`services/${NAME}/`])
      expect(tested).toMatchObject({ status: 0 })
      expect(tested.out).toMatch(/Test Suites: +2 passed, 2 total/)
    },
    // Copy, scaffold, tsc -b of one project, the deploy checks, its tests: under a minute when quiet.
    420_000,
  )

  it(
    `grown (calls patients, publishes, own scopes, a FHIR type), it needs at most ${MOST_HAND_EDITS} hand edits outside its folder, each named in docs/adding-a-service.md`,
    async () => {
      expect(existsSync(path.join(copy, `services/${NAME}/dist/server.js`))).toBe(true) // the first test ran
      grow(copy)
      const edited = ['packages/platform/services.json', `services/${NAME}/package.json`]
      expect(step(bin('prettier'), ['--write', ...edited], 60_000)).toMatchObject({ status: 0 })
      // Then regenerate, build and document, as docs/adding-a-service.md says (not hand edits).
      expect(step(process.execPath, ['scripts/generate.mjs'], 60_000)).toMatchObject({ status: 0 })
      // Formatted (npm test: prettier) and deploy-checked beside the build: the document's script
      // builds first (tsc -b) as `npm run openapi` does. Linted after it: eslint's type-aware rules
      // read the platform's declarations the build writes.
      const hand = ['packages/platform/src/contracts/demo-x.ts', 'services/gateway/src/scopes.ts']
      const [documented, formatted, checked] = await Promise.all([
        stepAsync(process.execPath, ['scripts/openapi.mjs'], 360_000),
        stepAsync(bin('prettier'), ['--check', `services/${NAME}`, ...hand, ...edited], 60_000),
        stepAsync('bash', ['deploy/check.sh'], 180_000),
      ])
      expect(documented).toMatchObject({ status: 0 })
      expect(documented.out).toContain('> building (tsc -b)')
      expect(documented.out).toContain(`wrote docs/openapi.json (`)
      expect(formatted).toMatchObject({ status: 0 })
      expect(checked).toMatchObject({ status: 0 })
      const linted = step(bin('eslint'), [`services/${NAME}`, ...hand], 180_000)
      expect(linted).toMatchObject({ status: 0 })

      // Its own tests (the template's and the flags test: patients asked, the event on the broker),
      // and the gateway's route-table test on the regenerated document.
      const tested = jestInCopy([`services/${NAME}/`, 'services/gateway/test/unit/scopes.test.ts'])
      expect(tested).toMatchObject({ status: 0 })
      expect(tested.out).toMatch(/Test Suites: +4 passed, 4 total/)

      // The document, the gateway of the copy and the e2e scope suite's reading of DESIGN agree on
      // each of its operations: the scope documented is the one asked and the one DESIGN gives.
      const doc = JSON.parse(read('docs/openapi.json')) as {
        paths: Record<string, Record<string, { 'x-scope'?: string }>>
      }
      const ops = Object.entries(doc.paths)
        .filter(([p]) => p.startsWith(`/${NAME}/`) || p.startsWith('/fhir/R4/Flag'))
        .flatMap(([p, methods]) => Object.entries(methods).map(([m, op]) => ({ method: m, path: p, op })))
      expect(ops.map((o) => [o.method, o.path, o.op['x-scope']])).toEqual([
        ['post', `/${NAME}/flags`, 'demo_x:write'],
        ['get', `/${NAME}/flags/{id}`, 'demo_x:read'],
        ['get', '/fhir/R4/Flag/{id}', 'demo_x:read'],
      ])
      const asked = step(
        process.execPath,
        [
          '-e',
          `const { scopesNeeded } = require('./services/gateway/dist/scopes.js')
           const { ROUTED_SERVICES } = require('./services/gateway/dist/families.js')
           const id = '0190c5a0-1234-7abc-8def-0123456789ab'
           console.log(JSON.stringify({
             routed: ROUTED_SERVICES.find((s) => s.service === ${JSON.stringify(NAME)}),
             asked: ${JSON.stringify(ops.map((o) => [o.method.toUpperCase(), o.path]))}
               .map(([m, p]) => scopesNeeded(m, '/api' + p.replace('{id}', id))),
           }))`,
        ],
        60_000,
      )
      expect(asked).toMatchObject({ status: 0 })
      expect(JSON.parse(asked.stdout)).toEqual({
        routed: expect.objectContaining({ families: [NAME], fhirTypes: ['Flag'] }),
        asked: ops.map((o) => [o.op['x-scope']]),
      })
      const design = jest.requireActual(path.join(copy, 'e2e/src/design-scopes.ts')) as {
        designScopeOf(o: { method: string; path: string; family: string }): string | undefined
      }
      for (const o of ops.filter((x) => x.path.startsWith(`/${NAME}/`)))
        expect([o.path, design.designScopeOf({ ...o, family: NAME })]).toEqual([o.path, o.op['x-scope']])

      // As npm start runs it: migrated (its flags table too) and ready, the outbox relay on.
      await migrateAndServe(copy, env)

      // The count: every file changed outside its folder, but the generated ones and the lockfile.
      const generated = new Set(generatedFiles(copy))
      const handEdits = changedIn(copy).filter(
        (f) => !f.startsWith(`services/${NAME}/`) && !generated.has(f) && f !== 'pnpm-lock.yaml',
      )
      expect(handEdits.length).toBeLessThanOrEqual(MOST_HAND_EDITS)
      const listed = handEditList(NAME)
      expect(listed).toHaveLength(MOST_HAND_EDITS)
      expect(handEdits.filter((f) => !listed.includes(f))).toEqual([])
      expect(handEdits).toEqual([
        'packages/platform/services.json',
        'packages/platform/src/contracts/demo-x.ts',
        'services/gateway/src/scopes.ts',
      ])
    },
    // Grow, generate, tsc -b (the platform's contracts changed: every project), the document, lint,
    // the deploy checks, its tests, start: 130 to 210 s measured on a shared 2-core machine.
    600_000,
  )
})

/** Migrates the service with its dist/db/migrate.js and serves dist/server.js until /health/ready answers. */
async function migrateAndServe(copy: string, env: Record<string, string | undefined>) {
  const dir = path.join(copy, 'services', NAME)
  let server: ChildProcess | undefined
  let database: string | undefined
  const rolePrefix = newDbRolePrefix()
  try {
    // service-env.cjs of the copy (it knows the new entry), a database and roles of its own.
    database = await createTestDatabase()
    const { serviceEnv } = createRequire(__filename)(path.join(copy, 'scripts/service-env.cjs'))
    const port = await freePort()
    const serviceEnvironment = serviceEnv(NAME, {
      ...env,
      DATABASE_URL: database,
      // Roles of its own (cluster-wide), dropped with its database below.
      DB_ROLE_PREFIX: rolePrefix,
      AMQP_URL: process.env.AMQP_URL,
      ASSERTION_ROOT_SECRET: 'test-assertion-root-0123456789abcdef0123456789',
      [namesOf(NAME).env.port]: String(port),
      LOG_LEVEL: 'warn',
    })
    const migrated = spawnSync(process.execPath, [path.join(dir, 'dist/db/migrate.js')], {
      env: serviceEnvironment,
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect([migrated.status, migrated.stderr]).toEqual([0, ''])
    const output: string[] = []
    server = spawn(process.execPath, [path.join(dir, 'dist/server.js')], {
      env: serviceEnvironment,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    for (const s of [server.stdout!, server.stderr!]) s.on('data', (d: Buffer) => output.push(d.toString()))
    const ready = await waitFor(
      async () => {
        if (server?.exitCode !== null) throw new Error(`exited ${server?.exitCode}: ${output.join('')}`)
        const res = await fetch(`http://127.0.0.1:${port}/health/ready`)
        return res.status === 200 && (await res.json())
      },
      { timeoutMs: 60_000, intervalMs: 200, what: `${NAME} /health/ready` },
    )
    expect(ready).toMatchObject({ status: 'ok', checks: { database: 'ok', broker: 'ok' } })
  } finally {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve))
      server.kill('SIGTERM')
      await exited
    }
    if (database) {
      await dropTestDatabase(database)
      await removeDbRoles(database, rolePrefix)
    }
  }
}

describe('new-service on a bare copy of what it reads and writes', () => {
  let copy: string
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [path.join(copy, 'scripts/new-service.mjs'), ...args, '--no-install'], {
      cwd: copy,
      encoding: 'utf8',
      timeout: 60_000,
    })
  beforeEach(() => {
    copy = bareCopy('clinic-new-service-')
  })
  afterEach(() => rmSync(copy, { recursive: true, force: true }))

  it('gives a planned area to the service named after it, with its resource type, off the 501 list', () => {
    const listFile = path.join(copy, 'packages/platform/services.json')
    // Every announced area is served today: announce one in the copy.
    const announced = JSON.parse(readFileSync(listFile, 'utf8'))
    announced.planned.push({ family: 'imaging', area: 'imaging', resource_type: 'image' })
    writeFileSync(listFile, JSON.stringify(announced, null, 2))
    const before = JSON.parse(readFileSync(listFile, 'utf8'))
    expect(run('imaging')).toMatchObject({ status: 0 })
    const after = JSON.parse(readFileSync(listFile, 'utf8'))
    const ports = [before.gateway, ...before.services].map((s: { port: number }) => s.port)
    expect(after.services.at(-1)).toEqual({
      name: 'imaging',
      port: Math.max(...ports) + 1,
      families: { imaging: 'image' },
      replicas: { min: 2, max: 4 },
      list_path: '/imaging',
    })
    expect(after.planned.map((p: { family: string }) => p.family)).not.toContain('imaging')
    expect(readFileSync(path.join(copy, 'services/imaging/src/config.ts'), 'utf8')).toContain(
      "IMAGING_PORT: v.servicePort('imaging')",
    )
  })

  it.each([
    ['Bad_Name', 'new-service: service name "Bad_Name": lowercase words joined by -'],
    ['patients', 'new-service: patients is already in packages/platform/services.json'],
  ])('refuses %s in one line, changing nothing', (name, line) => {
    const list = readFileSync(path.join(copy, 'packages/platform/services.json'), 'utf8')
    const r = run(name)
    expect([r.status, r.stderr]).toEqual([1, `${line}\n`])
    expect(readFileSync(path.join(copy, 'packages/platform/services.json'), 'utf8')).toBe(list)
  })
})
