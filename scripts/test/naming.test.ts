import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { apps, list, namesOf, resources, stackDbRole } from '../../packages/platform/naming.cjs'
import { contractsByService, eventContracts } from '../../packages/platform/src/contracts'
import { CALLS } from '../../packages/platform/src/internal-api/index'
import { upstreamEnv } from '../../services/gateway/src/families'
import { assertionKeyPair, serviceEnv } from '../service-env.cjs'
import { bareCopy } from './bare-copy'

/**
 * One name per service: packages/platform/naming.cjs makes every name of a service from its entry
 * in services.json, and everything that needs one (service-env, the generators, the deploy checks,
 * the gateway, the e2e stack, the Dockerfile) asks it. Plus what services.json says about each
 * service (schema, publishes, consumes, calls, list_path) against the code.
 */
const ROOT = path.resolve(__dirname, '../..')
const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8')

describe('naming.cjs', () => {
  it('names a hyphenated service a-b one way', () => {
    expect(namesOf('a-b')).toEqual({
      name: 'a-b',
      envPrefix: 'A_B',
      loginRole: 'clinic_a_b',
      schema: 'a_b',
      brokerUser: 'clinic-a-b',
      image: 'clinic/a-b',
      env: {
        port: 'A_B_PORT',
        url: 'A_B_URL',
        dbPassword: 'A_B_DB_PASSWORD',
        amqpPassword: 'A_B_AMQP_PASSWORD',
        amqpUrl: 'A_B_AMQP_URL',
        databaseUrl: 'A_B_DATABASE_URL',
      },
    })
  })

  it('keeps the names the services have today (the gateway owns the identity schema)', () => {
    expect(apps.map((s) => [namesOf(s).schema, namesOf(s).loginRole, namesOf(s).brokerUser])).toEqual([
      ['identity', 'clinic_gateway', 'clinic-gateway'],
      ['patients', 'clinic_patients', 'clinic-patients'],
      ['appointments', 'clinic_appointments', 'clinic-appointments'],
      ['comms', 'clinic_comms', 'clinic-comms'],
      ['audit', 'clinic_audit', 'clinic-audit'],
      ['webhooks', 'clinic_webhooks', 'clinic-webhooks'],
      ['clinical', 'clinic_clinical', 'clinic-clinical'],
      ['documents', 'clinic_documents', 'clinic-documents'],
    ])
  })

  it('refuses a name that is not lowercase words joined by -', () => {
    for (const bad of ['A-b', 'a_b', 'a--b', '-a', 'a-', ''])
      expect(() => namesOf({ name: bad, port: 1, replicas: { min: 1, max: 1 } })).toThrow(/lowercase/)
  })

  it('gives the same names to service-env and the gateway', () => {
    const env = serviceEnv('a-b', {
      DATABASE_URL: 'postgres://owner:pw@db.example:5432/clinic',
      EVENT_SIGNING_SECRET: 'x'.repeat(32),
    })
    expect(new URL(env.DATABASE_URL!).username).toBe('clinic_a_b')
    expect(env.MIGRATION_DATABASE_URL).toBe('postgres://owner:pw@db.example:5432/clinic')
    expect(upstreamEnv('a-b')).toBe('A_B_URL')
  })

  it("prefixes a stack's database roles with its DB_ROLE_PREFIX, and passes the prefix on to the service", () => {
    const env = serviceEnv('a-b', {
      DATABASE_URL: 'postgres://owner:pw@db.example:5432/clinic',
      DB_ROLE_PREFIX: 't0a1b2c3d_',
    })
    expect(new URL(env.DATABASE_URL!).username).toBe('t0a1b2c3d_clinic_a_b')
    expect(stackDbRole(namesOf('a-b').loginRole, 't0a1b2c3d_')).toBe('t0a1b2c3d_clinic_a_b')
    // The service's migrations grant to `<prefix><role>` and it runs as that role.
    expect(env.DB_ROLE_PREFIX).toBe('t0a1b2c3d_')
    expect(() =>
      serviceEnv('a-b', { DATABASE_URL: 'postgres://owner@db.example/clinic', DB_ROLE_PREFIX: 'T-1' }),
    ).toThrow(/DB_ROLE_PREFIX/)
    expect(() => stackDbRole(`${'x'.repeat(60)}_`, 't0a1b2c3d_')).toThrow(/63/)
  })

  it('logs each service in to the broker as its own user, with no event key and no root secret', () => {
    const env = {
      DATABASE_URL: 'postgres://owner:pw@db.example:5432/clinic',
      AMQP_URL: 'amqp://guest:guest@mq.example:5672/clinic_test_x',
      BROKER_ROOT_SECRET: 'r'.repeat(32),
      BROKER_USER_PREFIX: 't1-',
      EVENT_SIGNING_SECRET: 'x'.repeat(32),
    }
    const urls = apps.map((s) => new URL(serviceEnv(s.name, env).AMQP_URL!))
    expect(urls.map((u) => decodeURIComponent(u.username))).toEqual(
      apps.map((s) => `t1-${namesOf(s).brokerUser}`),
    )
    expect(new Set(urls.map((u) => u.password)).size).toBe(apps.length)
    for (const u of urls) expect(`${u.host}${u.pathname}`).toBe('mq.example:5672/clinic_test_x')
    for (const s of apps) {
      const out = serviceEnv(s.name, env)
      expect([out.BROKER_ROOT_SECRET, out.BROKER_USER_PREFIX, out.EVENT_VERIFY_KEYS]).toEqual([
        undefined,
        undefined,
        undefined,
      ])
    }
  })

  it("gives the gateway's private key to the gateway alone, and each caller its own key", () => {
    const env = {
      DATABASE_URL: 'postgres://owner:pw@db.example:5432/clinic',
      ASSERTION_ROOT_SECRET: 'r'.repeat(40),
      // Set by mistake in a shared .env: still given to the gateway only.
      GATEWAY_SIGNING_KEY: 'from-the-shared-env',
    }
    const of = Object.fromEntries(apps.map((s) => [s.name, serviceEnv(s.name, env)]))
    const gateway = assertionKeyPair(env.ASSERTION_ROOT_SECRET, 'gateway')
    expect(of.gateway!.GATEWAY_SIGNING_KEY).toBe(gateway.privateKey)
    for (const s of apps.filter((a) => a.name !== 'gateway')) {
      expect([s.name, of[s.name]!.GATEWAY_SIGNING_KEY]).toEqual([s.name, undefined])
      expect(of[s.name]!.GATEWAY_VERIFY_KEY).toBe(gateway.publicKey)
    }
    // No process receives the root secret the keys are derived from.
    for (const s of apps) expect([s.name, of[s.name]!.ASSERTION_ROOT_SECRET]).toEqual([s.name, undefined])
    // Callers (services.json `calls`) sign with their own key; the called hold their callers' public keys.
    const pub = (n: string) => assertionKeyPair(env.ASSERTION_ROOT_SECRET, n).publicKey
    expect(of.comms!.SERVICE_SIGNING_KEY).toBe(
      assertionKeyPair(env.ASSERTION_ROOT_SECRET, 'comms').privateKey,
    )
    expect(of.appointments!.SERVICE_SIGNING_KEY).toBeDefined()
    expect(of.patients!.SERVICE_SIGNING_KEY).toBeUndefined()
    expect(of.patients!.SERVICE_VERIFY_KEYS).toBe(
      `appointments=${pub('appointments')},comms=${pub('comms')},clinical=${pub('clinical')},documents=${pub('documents')}`,
    )
    expect(of.appointments!.SERVICE_VERIFY_KEYS).toBe(
      `comms=${pub('comms')},clinical=${pub('clinical')},documents=${pub('documents')}`,
    )
    expect(of.audit!.SERVICE_VERIFY_KEYS).toBeUndefined()
    expect(
      new Set(apps.map((s) => assertionKeyPair(env.ASSERTION_ROOT_SECRET, s.name).privateKey)).size,
    ).toBe(apps.length)
  })

  it('gives the same password variable to deploy/rabbitmq/users.sh (shell, no node in the broker image)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'clinic-users-'))
    try {
      const file = path.join(dir, 'definitions.json')
      writeFileSync(file, JSON.stringify({ users: [{ name: namesOf('a-b').brokerUser }] }, null, 2))
      // It checks every password before it runs rabbitmqctl: a missing one names its variable.
      const r = spawnSync('sh', [path.join(ROOT, 'deploy/rabbitmq/users.sh')], {
        env: { PATH: process.env.PATH, DEFINITIONS: file },
        encoding: 'utf8',
      })
      expect(r.status).toBe(1)
      expect(r.stderr).toContain(`${namesOf('a-b').env.amqpPassword} is not set (the password of clinic-a-b)`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('no name made by hand', () => {
  const DIRS = ['scripts', 'deploy/checks', 'e2e/src', 'e2e/test', 'services/gateway/src']
  const files = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? files(path.join(dir, e.name))
        : /\.(m|c)?[jt]s$/.test(e.name)
          ? [path.join(dir, e.name)]
          : [],
    )
  const PATTERNS = [/clinic_\$\{/, /clinic-\$\{/, /toUpperCase\(\)\s*\.replace\(/, /_AMQP_PASSWORD`/]
  it.each(DIRS)('%s builds no login role, broker user or variable name itself', (dir) => {
    const found = files(dir)
      .filter((f) => f !== path.join('scripts', 'test', 'naming.test.ts'))
      .flatMap((f) =>
        read(f)
          .split('\n')
          .map((line, i) => ({ f, line, i }))
          .filter(({ line }) => PATTERNS.some((re) => re.test(line)))
          .map(({ f, line, i }) => `${f}:${i + 1}: ${line.trim()}`),
      )
    expect(found).toEqual([])
  })
  it('the Dockerfile neither: it asks @clinic/platform/naming for the port variable', () => {
    const text = read('Dockerfile')
    expect(text).not.toMatch(/toUpperCase|_PORT'/)
    expect(text).toContain("require('@clinic/platform/naming')")
  })
})

describe('services.json against the code', () => {
  it("names each service's schema as its migrations do", () => {
    for (const s of apps)
      expect([s.name, read(`services/${s.name}/src/db/migrations/index.ts`)]).toEqual([
        s.name,
        expect.stringContaining(`export const SCHEMA = '${namesOf(s).schema}'`),
      ])
  })

  it("lists as each app's publishes exactly the event types of its contracts file", () => {
    for (const s of apps)
      expect([s.name, [...(s.publishes ?? [])].sort()]).toEqual([
        s.name,
        Object.keys((contractsByService as Record<string, object>)[s.name] ?? {}).sort(),
      ])
    expect(Object.keys(eventContracts).sort()).toEqual(apps.flatMap((s) => s.publishes ?? []).sort())
  })

  it("names each consumer's queue as its code does (the bindings are the broker topology's alone)", () => {
    for (const s of apps)
      for (const c of s.consumes ?? []) {
        const dir = `services/${s.name}/src`
        const code = tsFiles(dir)
          .map((f) => read(f))
          .join('\n')
        expect([s.name, code]).toEqual([s.name, expect.stringContaining(`'${c.queue}'`)])
      }
  })

  it('gives each service a typed client of exactly the services it calls, and no client or internal route of its own', () => {
    const names = resources.map((s) => s.name)
    const calls: Record<string, readonly string[]> = CALLS
    for (const s of apps) {
      if (s.name === 'gateway') continue // it reaches every resource service (its routing table)
      // internal-api/index.ts, generated from services.json, types `deps.services` of each caller.
      expect([s.name, [...(calls[s.name] ?? [])].sort()]).toEqual([s.name, [...(s.calls ?? [])].sort()])
      for (const c of s.calls ?? []) expect(names).toContain(c)
      // The per-pair client classes are gone: platform builds each from the declarations.
      expect([s.name, existsSync(path.join(ROOT, 'services', s.name, 'src', 'clients'))]).toEqual([
        s.name,
        false,
      ])
      const code = tsFiles(`services/${s.name}/src`)
        .map((f) => read(f))
        .join('\n')
      // No call made by hand, and no internal route registered outside its declaration.
      expect([
        s.name,
        /import \{[^}]*\b(callService|lookUp)\b[^}]*\} from '@clinic\/platform/.test(code),
      ]).toEqual([s.name, false])
      expect([s.name, code.includes("'/internal/")]).toEqual([s.name, false])
    }
  })

  it('gives each service a list path under one of its families', () => {
    for (const s of resources)
      expect(Object.keys(s.families).map((f) => new RegExp(`^/${f}(/|$)`).test(s.list_path))).toContain(true)
    expect(list.gateway.name).toBe('gateway')
  })
})

function tsFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? tsFiles(path.join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [path.join(dir, e.name)]
        : [],
  )
}

/**
 * scripts/generate.mjs on a copy of what it reads and writes, so the checkout is never touched:
 * `--check` passes on the committed files, fails naming a file that differs; a new hyphenated
 * service gets its names from naming.cjs in every generated file.
 */
describe('generated files', () => {
  let copy: string
  const generate = (...args: string[]) =>
    spawnSync(process.execPath, [path.join(copy, 'scripts', 'generate.mjs'), ...args], {
      cwd: copy,
      encoding: 'utf8',
    })
  beforeEach(() => {
    copy = bareCopy('clinic-generate-')
  })
  afterEach(() => rmSync(copy, { recursive: true, force: true }))

  it('--check passes on the committed files and names one that differs', () => {
    expect(generate('--check')).toMatchObject({ status: 0 })
    const file = path.join(copy, 'deploy/rabbitmq/definitions.json')
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('"^patient\\\\.', '"^patient\\\\.|^appointment\\\\.'),
    )
    const r = generate('--check')
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('deploy/rabbitmq/definitions.json is stale')
  })

  it('--check fails when services.json changes and the files are not regenerated', () => {
    const file = path.join(copy, 'packages/platform/services.json')
    const json = JSON.parse(readFileSync(file, 'utf8'))
    json.services[0].port = 9181
    writeFileSync(file, JSON.stringify(json, null, 2))
    const r = generate('--check')
    expect(r.status).toBe(1)
    expect(r.stderr).toContain('deploy/compose/compose.yaml is stale')
    expect(r.stderr).toContain('deploy/k8s/networkpolicy.yaml is stale')
  })

  it('names a new hyphenated service a-b the one way in every generated file', () => {
    const file = path.join(copy, 'packages/platform/services.json')
    const json = JSON.parse(readFileSync(file, 'utf8'))
    json.services.push({
      name: 'a-b',
      port: 8089,
      families: { 'a-b': 'thing' },
      list_path: '/a-b',
      replicas: { min: 2, max: 4 },
      publishes: ['thing.created'],
      calls: ['patients'],
    })
    writeFileSync(file, JSON.stringify(json, null, 2))
    expect(generate()).toMatchObject({ status: 0 })
    const out = (p: string) => readFileSync(path.join(copy, p), 'utf8')
    const all = [
      '.env.example',
      'deploy/compose/compose.yaml',
      'deploy/compose/.env.example',
      'deploy/k8s/configmap.yaml',
      'deploy/k8s/secret.example.yaml',
      'deploy/k8s/kustomization.yaml',
      'deploy/k8s/networkpolicy.yaml',
      'deploy/k8s/services/a-b/values.yaml',
      'deploy/rabbitmq/definitions.json',
    ]
      .map(out)
      .join('\n')
    for (const want of [
      'A_B_PORT',
      'A_B_URL',
      'postgres://clinic_a_b:${A_B_DB_PASSWORD',
      'amqp://clinic-a-b:${A_B_AMQP_PASSWORD',
      'A_B_DATABASE_URL: postgres://clinic_a_b:',
      'A_B_AMQP_URL: amqps://clinic-a-b:',
      'env_prefix: A_B',
      'image: clinic/a-b:',
      '"user": "clinic-a-b"',
      '"write": "^thing\\\\.created$"',
      'name: patients-from-gateway-appointments-comms-clinical-documents-a-b',
    ])
      expect(all).toContain(want)
    for (const wrong of [/clinic_a-b/, /clinic-a_b/, /A-B/, /a_b-/]) expect(all).not.toMatch(wrong)
  })
})
