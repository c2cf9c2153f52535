import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
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
 * `npm run new-service -- demo-x` in a copy of the repository (the checkout is never touched): the
 * service it makes builds with the rest (tsc -b through the generated references), passes the
 * deploy checks, migrates and answers /health/ready as `npm start` would run it, and nothing
 * outside its folder changed but its services.json entry and the generated files.
 */
const ROOT = path.resolve(__dirname, '../..')
const NAME = 'demo-x'
/** What new-service may change outside services/<name>/: its entry, and what the generator writes. */
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

/**
 * The working tree without .git (git in the copy would reach the real repository) and without the
 * installed packages: the root node_modules is linked, each package's own node_modules (pnpm's
 * relative links) copied as links, so every workspace package resolves inside the copy. dist/ and
 * the build info come along with their times, so tsc -b builds only what changed.
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
  return copy
}

const dependenciesOf = (file: string): string[] =>
  Object.keys(JSON.parse(readFileSync(file, 'utf8')).dependencies ?? {})

it(
  'makes a service that builds, passes the deploy checks and answers /health/ready, editing nothing by hand',
  async () => {
    const copy = copyOfRepo()
    const env = { PATH: process.env.PATH, HOME: process.env.HOME }
    // Each step is bounded, so a stuck one fails the test with its output instead of hanging it.
    const step = (cmd: string, args: string[], timeoutMs: number) => {
      const r = spawnSync(cmd, args, { cwd: copy, env, encoding: 'utf8', timeout: timeoutMs })
      return { status: r.status, out: `${r.stdout}\n${r.stderr}${r.error ? `\n${r.error.message}` : ''}` }
    }
    let server: ChildProcess | undefined
    let database: string | undefined
    const rolePrefix = newDbRolePrefix()
    try {
      // --no-install: pnpm would write into the real node_modules, which the copy links to.
      const made = step('npm', ['run', '-s', 'new-service', '--', NAME, '--no-install'], 60_000)
      expect(made).toMatchObject({ status: 0 })
      const dir = path.join(copy, 'services', NAME)

      // What pnpm install would link, offline: the scaffold's dependencies are a subset of patients'.
      const patients = path.join(copy, 'services/patients')
      expect(dependenciesOf(path.join(patients, 'package.json'))).toEqual(
        expect.arrayContaining(dependenciesOf(path.join(dir, 'package.json'))),
      )
      cpSync(path.join(patients, 'node_modules'), path.join(dir, 'node_modules'), {
        recursive: true,
        verbatimSymlinks: true,
      })

      const tracked = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).stdout.split('\0')
      const changed = tracked.filter(
        (f) =>
          f &&
          existsSync(path.join(ROOT, f)) &&
          readFileSync(path.join(ROOT, f), 'utf8') !== readFileSync(path.join(copy, f), 'utf8'),
      )
      expect(changed.sort()).toEqual(CHANGED_OUTSIDE)
      const read = (f: string) => readFileSync(path.join(copy, f), 'utf8')
      expect(JSON.parse(read('packages/platform/services.json')).services.at(-1)).toMatchObject({
        name: NAME,
        families: { [NAME]: 'demo_x' },
        list_path: `/${NAME}`,
      })
      expect(read('tsconfig.json')).toContain(`"services/${NAME}"`)
      expect(read('deploy/compose/compose.yaml')).toContain(`migrate-${NAME}:`)
      expect(read('deploy/rabbitmq/definitions.json')).toContain(`"${namesOf(NAME).brokerUser}"`)
      expect(read('deploy/k8s/networkpolicy.yaml')).toContain(`name: ${NAME}-from-gateway`)
      expect(existsSync(path.join(copy, `deploy/k8s/services/${NAME}/kustomization.yaml`))).toBe(true)

      const bin = (b: string) => path.join(copy, 'node_modules/.bin', b)
      expect(step(bin('prettier'), ['--check', `services/${NAME}`], 60_000)).toMatchObject({ status: 0 })
      const built = step(bin('tsc'), ['-b'], 240_000)
      expect(built).toMatchObject({ status: 0 })
      expect(existsSync(path.join(dir, 'dist/server.js'))).toBe(true)
      const checked = step('bash', ['deploy/check.sh'], 180_000)
      expect(checked).toMatchObject({ status: 0 })
      expect(checked.out).toContain(`ok   deploy/k8s/services/${NAME} (`)

      // As npm start runs it: service-env.cjs of the copy (it knows the new entry), migrate, serve.
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
      rmSync(copy, { recursive: true, force: true })
    }
  },
  // Copy, scaffold, tsc -b of one project and the deploy checks: about a minute on a quiet machine.
  420_000,
)

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
