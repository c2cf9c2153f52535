import { execFile, spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { dockerEngineAnswers, freePort, waitFor } from '@clinic/platform/testing'

/**
 * deploy/compose/compose.yaml, run (DESIGN.md section 18): the images built from the Dockerfile on
 * the images deploy/images/images.mjs chooses (pinned, or Debian stand-ins where no registry
 * answers), the whole stack brought up with Compose, every service at its replica count and
 * patients at 3, then used from outside through the containerised gateway only.
 */

const ROOT = path.resolve(__dirname, '../..')
const PROJECT = `clinic-test-${process.pid}`
const TAG = 'local'
const engine = dockerEngineAnswers()
if (!engine)
  process.stderr.write(
    'deploy/test/compose.test.ts: no Docker engine answers: the Compose suite did not run\n',
  )
const describeWithEngine = engine ? describe : describe.skip
// Under CI the suite must run: without an engine it fails, never passes skipped.
if (!engine && process.env.CI === 'true')
  it('runs under CI=true, which needs a Docker engine (scripts/ensure-docker.mjs starts one as root)', () => {
    throw new Error('no Docker engine answers: the Compose suite cannot run')
  })

/**
 * A docker command that lets the event loop run while it does (the writes a disturbance happens
 * under keep going).
 */
const docker = (...args: string[]) => promisify(execFile)('docker', args, { timeout: 120_000 })

/** A command to its end: its output, or an error with the output when it fails. */
function run(
  cmd: string,
  args: string[],
  o: { input?: string; allowFail?: boolean; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
) {
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    env: o.env ?? process.env,
    input: o.input,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: o.timeoutMs ?? 10 * 60_000,
  })
  if (r.status !== 0 && !o.allowFail)
    throw new Error(
      `${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}\n${r.stdout?.slice(-4000)}\n${r.stderr?.slice(-4000)}`,
    )
  return { status: r.status, out: r.stdout ?? '', err: r.stderr ?? '' }
}

/** `docker compose` when the plugin is there, else Debian's docker-compose (1.29). */
const COMPOSE =
  spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0
    ? ['docker', 'compose']
    : ['docker-compose']

let envFile = ''
let clusterFile = ''
function compose(args: string[], o?: Parameters<typeof run>[2]) {
  const files = [
    '-f',
    'deploy/compose/compose.yaml',
    '-f',
    'deploy/test/compose.override.yaml',
    '-f',
    clusterFile,
  ]
  // Compose takes a variable from its own environment before the env file: it gets none of the
  // test's (Jest's LOG_LEVEL=silent would silence every container).
  const env = Object.fromEntries(
    ['PATH', 'HOME', 'DOCKER_HOST'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]),
  )
  return run(COMPOSE[0]!, [...COMPOSE.slice(1), '-p', PROJECT, '--env-file', envFile, ...files, ...args], {
    ...o,
    env,
  })
}

/** Every variable of .env.example, with a value of its kind made for this run. */
function composeEnv(gatewayPort: number, images: Record<string, string>): string {
  const example = readFileSync(path.join(ROOT, 'deploy/compose/.env.example'), 'utf8')
  const names = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!)
  const keys = new Map<string, { signing: string; verify: string }>()
  const pairOf = (prefix: string) => {
    if (!keys.has(prefix)) {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519')
      keys.set(prefix, {
        signing: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url'),
        verify: publicKey.export({ format: 'der', type: 'spki' }).toString('base64url'),
      })
    }
    return keys.get(prefix)!
  }
  const value = (name: string): string => {
    const key = /^(.*)_(SIGNING|VERIFY)_KEY$/.exec(name)
    if (key) return key[2] === 'SIGNING' ? pairOf(key[1]!).signing : pairOf(key[1]!).verify
    if (name.endsWith('_PASSWORD')) return randomBytes(12).toString('hex')
    if (name === 'COMPOSE_PROJECT_NAME') return PROJECT
    if (name === 'PUBLIC_BASE_URL') return `http://127.0.0.1:${gatewayPort}`
    // comms writes files (compose.override.yaml); the providers' settings are still required.
    if (name === 'SMTP_URL') return 'smtp://unused:unused@127.0.0.1:25'
    if (name === 'TWILIO_ACCOUNT_SID') return 'ACunused'
    if (name === 'TWILIO_FROM') return '+34600000000'
    return randomBytes(32).toString('hex')
  }
  const lines = names.map((n) => `${n}=${value(n)}`)
  lines.push(`GATEWAY_PUBLISH_PORT=${gatewayPort}`, `TAG=${TAG}`, 'WEBHOOKS_ALLOW_INSECURE=true')
  for (const [k, v] of Object.entries(images)) lines.push(`${k}=${v}`)
  return `${lines.join('\n')}\n`
}

/** The broker's three nodes: rabbitmq of compose.yaml and two more. */
const NODES = ['rabbitmq', 'rabbitmq-2', 'rabbitmq-3']

/**
 * RabbitMQ as a cluster of three nodes, as production runs it (DESIGN.md section 9): one Erlang
 * cookie, peer discovery from a fixed list, quorum queues (rabbitmq/definitions.json) with a
 * replica on each node, every service given every node (AMQP_HOSTS). Compose reads JSON as YAML.
 */
function clusterOverride(dir: string): string {
  const conf = path.join(dir, 'cluster.conf')
  writeFileSync(
    conf,
    [
      'cluster_formation.peer_discovery_backend = classic_config',
      ...NODES.map((n, i) => `cluster_formation.classic_config.nodes.${i + 1} = rabbit@${n}`),
    ].join('\n') + '\n',
  )
  const cookie = randomBytes(20).toString('hex')
  const mount = `${conf}:/etc/rabbitmq/conf.d/20-cluster.conf:ro`
  const node = (name: string) => ({
    image: '${RABBITMQ_IMAGE}',
    hostname: name,
    restart: 'unless-stopped',
    environment: {
      RABBITMQ_ERLANG_COOKIE: cookie,
      RABBITMQ_DEFAULT_USER: 'clinic',
      RABBITMQ_DEFAULT_PASS: '${RABBITMQ_PASSWORD}',
    },
    volumes: [`${name}:/var/lib/rabbitmq`, mount],
    healthcheck: {
      test: ['CMD', 'rabbitmq-diagnostics', '-q', 'check_port_connectivity'],
      interval: '10s',
      timeout: '10s',
      retries: 10,
      start_period: '30s',
    },
    deploy: { resources: { limits: { cpus: '1', memory: '1G' } } },
  })
  const hosts = NODES.map((n) => `${n}:5672`).join(',')
  const doc = {
    services: {
      rabbitmq: { environment: { RABBITMQ_ERLANG_COOKIE: cookie }, volumes: [mount] },
      'rabbitmq-2': node('rabbitmq-2'),
      'rabbitmq-3': node('rabbitmq-3'),
      // The users are imported once all three run (the services wait for broker-users).
      'broker-users': {
        depends_on: {
          'rabbitmq-2': { condition: 'service_healthy' },
          'rabbitmq-3': { condition: 'service_healthy' },
        },
      },
      ...Object.fromEntries(['gateway', ...SERVICES].map((s) => [s, { environment: { AMQP_HOSTS: hosts } }])),
    },
    volumes: { 'rabbitmq-2': {}, 'rabbitmq-3': {} },
  }
  const file = path.join(dir, 'compose.cluster.json')
  writeFileSync(file, JSON.stringify(doc, null, 2))
  return file
}

let work = ''
let api = ''
let token = ''
const SERVICES: string[] = JSON.parse(
  readFileSync(path.join(ROOT, 'packages/platform/services.json'), 'utf8'),
).services.map((s: { name: string }) => s.name)

/** The containers of one service, by name, as Compose made them. */
function containersOf(service: string): string[] {
  return run('docker', [
    'ps',
    '--filter',
    `label=com.docker.compose.project=${PROJECT}`,
    '--filter',
    `label=com.docker.compose.service=${service}`,
    '--format',
    '{{.Names}}',
  ])
    .out.split('\n')
    .filter(Boolean)
    .sort()
}

const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${api}${p}`, {
    method,
    headers: {
      'X-service-Token': token,
      ...(body ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    body: body ? JSON.stringify(body) : undefined,
  })

/** One row of `psql -At` in the postgres container, as the schema owner. */
const sql = (query: string) =>
  compose(['exec', '-T', 'postgres', 'psql', '-U', 'clinic', '-d', 'clinic', '-Atc', query]).out.trim()

/**
 * The admin CLI as deploy/README.md runs it in Compose: in a one-off migrate-gateway container, as
 * the schema owner (the gateway's own role may only read the identity tables). Each command's
 * arguments in turn, in one container (a one-off container costs seconds on two busy cores); the
 * first that fails stops the rest. What they printed.
 */
const admin = (...commands: string[][]) => {
  const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`
  const script = commands.map((args) => `node dist/cli/admin.js ${args.map(quote).join(' ')}`).join(' && ')
  return compose([
    'run',
    '--rm',
    '--no-deps',
    '-T',
    'migrate-gateway',
    'sh',
    '-c',
    `export DATABASE_URL="$MIGRATION_DATABASE_URL" && ${script}`,
  ]).out.trim()
}

/** A company with one center and one user, and that user's new token (as the walk-through makes them). */
const tenant = (company: number, name: string, center: string, username: string) =>
  admin(
    ['company:create', '--id', String(company), '--name', name],
    ['center:create', '--company', String(company), '--code', 'ALM1', '--name', center],
    ['user:create', '--company', String(company), '--username', username],
    ['token:create', '--username', username],
  )
    .split('\n')
    .pop()!

describeWithEngine('Compose: the stack in containers', () => {
  // Twenty-odd containers on two cores: each step is given minutes.
  jest.setTimeout(6 * 60_000)

  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), 'clinic-compose-'))
    // The images: resolved (stand-ins built when no registry answers) and the services' built.
    const imagesFile = path.join(work, 'images.json')
    const built = run(process.execPath, ['deploy/images/images.mjs', '--build', '--json', imagesFile], {
      timeoutMs: 40 * 60_000,
    })
    process.stderr.write(built.out)
    const { sources: _, ...images } = JSON.parse(readFileSync(imagesFile, 'utf8'))
    const port = await freePort()
    clusterFile = clusterOverride(work)
    envFile = path.join(work, '.env')
    writeFileSync(envFile, composeEnv(port, images))
    api = `http://127.0.0.1:${port}/api`
    // Every service at its replica count (deploy.replicas), patients at 3. `up` returns once the
    // gateway has started, after every service it depends on is healthy.
    compose(['up', '-d', '--no-build', '--scale', 'patients=3'], { timeoutMs: 10 * 60_000 })
    // Every container's own healthcheck passing (the gateway's too), then the gateway answering.
    await waitFor(
      () => {
        const health = run('docker', [
          'ps',
          '--filter',
          `label=com.docker.compose.project=${PROJECT}`,
          '--format',
          '{{.Names}} {{.Status}}',
        ]).out
        return !/health: starting|unhealthy/.test(health) && /gateway_1 Up .*\(healthy\)/.test(health)
      },
      { what: 'every replica to be healthy', timeoutMs: 240_000, intervalMs: 1000 },
    )
    await waitFor(async () => (await fetch(`${api}/health`)).status === 200, {
      what: 'the gateway to answer',
      timeoutMs: 60_000,
      intervalMs: 1000,
    })
  }, 50 * 60_000)

  afterAll(() => {
    if (envFile) compose(['down', '-v', '--remove-orphans', '-t', '5'], { allowFail: true })
    if (work) rmSync(work, { recursive: true, force: true })
  }, 5 * 60_000)

  it('comes up healthy: migrations ran and exited 0, every replica healthy', () => {
    for (const s of ['gateway', ...SERVICES]) {
      const state = run('docker', [
        'ps',
        '-a',
        '--filter',
        `label=com.docker.compose.project=${PROJECT}`,
        '--filter',
        `label=com.docker.compose.service=migrate-${s}`,
        '--format',
        '{{.Status}}',
      ]).out.trim()
      expect([s, state]).toEqual([s, expect.stringMatching(/^Exited \(0\)/)])
    }
    for (const s of ['gateway', ...SERVICES]) {
      const names = containersOf(s)
      expect([s, names.length]).toEqual([s, s === 'patients' ? 3 : s === 'gateway' ? 1 : 2])
      for (const name of names)
        expect([
          name,
          run('docker', ['inspect', '--format', '{{.State.Health.Status}}', name]).out.trim(),
        ]).toEqual([name, 'healthy'])
    }
  })

  it('runs every service as uid 1000 on a read-only root filesystem, without capabilities', () => {
    for (const s of ['gateway', ...SERVICES])
      for (const name of containersOf(s)) {
        const inspect = JSON.parse(run('docker', ['inspect', name]).out)[0]
        expect([
          name,
          inspect.Config.User,
          inspect.HostConfig.ReadonlyRootfs,
          inspect.HostConfig.CapDrop,
        ]).toEqual([name, '1000:1000', true, ['ALL']])
        expect(run('docker', ['exec', name, 'sh', '-c', 'id -u; touch /app/x 2>&1 || true']).out).toMatch(
          /^1000\n.*(Read-only|Permission denied)/s,
        )
      }
  })

  it('answers the walk-through through the containerised gateway', async () => {
    token = tenant(7, 'Clinica Sol', 'Centro Norte', 'alice')

    const unauth = await fetch(`${api}/patients`)
    expect(unauth.status).toBe(401)
    expect(unauth.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(unauth.headers.get('x-service-version')).toBeTruthy()

    const created = await call('POST', '/patients', {
      first_name: 'Lucia',
      last_name: 'Garcia',
      birth_date: '1990-04-02',
      codalmacen: 'ALM1',
    })
    expect(created.status).toBe(201)
    const patient = (await created.json()) as { id: string }
    const read = await call('GET', `/patients/${patient.id}`)
    expect([read.status, ((await read.json()) as { first_name: string }).first_name]).toEqual([200, 'Lucia'])
    const list = await call('GET', '/patients?limit=5')
    expect(list.status).toBe(200)
    expect(list.headers.get('x-service-version')).toBeTruthy()

    // The read and the write are on the audit trail (through the broker, to audit's chain).
    await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?resource_type=patient&resource_id=${patient.id}`)
        const actions = (((await res.json()) as { data?: { action: string }[] }).data ?? []).map(
          (e: { action: string }) => e.action,
        )
        return actions.includes('patient.created') && actions.some((a: string) => a !== 'patient.created')
      },
      { what: 'the audit trail to show the patient', timeoutMs: 60_000, intervalMs: 1000 },
    )
    const verify = compose(
      ['exec', '-T', 'audit', 'node', 'dist/cli/admin.js', 'audit:verify', '--company', '7'],
      { allowFail: true },
    )
    expect(verify.status).toBe(0)
  })

  it('spreads reads over the three patients replicas', async () => {
    const created = await call('POST', '/patients', {
      first_name: 'Ana',
      last_name: 'Ruiz',
      birth_date: '1985-01-02',
      codalmacen: 'ALM1',
    })
    const { id } = (await created.json()) as { id: string }
    const since = new Date().toISOString()
    // Compose balances by DNS: each new connection of the gateway's pool to `patients` gets the
    // replicas' addresses in another order. 24 reads at once open some 24 connections, and each
    // replica is missed by all of them with a probability of about 3 * (2/3)^24, 0.02 %.
    for (let i = 0; i < 8; i++)
      await Promise.all(
        Array.from({ length: 24 }, () => call('GET', `/patients/${id}`).then((r) => r.arrayBuffer())),
      )
    const perReplica = containersOf('patients').map(
      (name) =>
        run('docker', ['logs', '--since', since, name])
          .out.split('\n')
          .filter((l) => l.includes('"route":"/patients/:id"')).length,
    )
    process.stderr.write(`compose: 192 reads over the patients replicas: ${perReplica.join(' / ')}\n`)
    expect(perReplica).toHaveLength(3)
    for (const n of perReplica) expect(n).toBeGreaterThan(0)
    expect(perReplica.reduce((a, b) => a + b, 0)).toBe(192)
  })

  /**
   * 150 creates of patients from 4 clients in company `company`, `disturb` run once a third are
   * done; then what was answered, recorded in patients and recorded (once) by audit.
   */
  async function writesUnder(company: number, disturb: () => Promise<void>) {
    const writer = tenant(company, `Clinica ${company}`, 'Centro', `writer${company}`)
    const total = 150
    let done = 0
    let retries = 0
    const ids = new Set<string>()
    // Each write has its Idempotency-Key: a write that may or may not have been committed when
    // its answer was lost is sent again with the same key, as a client does, and answers the one
    // patient.
    const write = async (i: number) => {
      const key = randomUUID()
      for (let attempt = 0; ; attempt++) {
        try {
          const res = await fetch(`${api}/patients`, {
            method: 'POST',
            headers: {
              'X-service-Token': writer,
              'Content-Type': 'application/json',
              'Idempotency-Key': key,
            },
            body: JSON.stringify({
              first_name: `W${i}`,
              last_name: 'Test',
              birth_date: '1970-01-01',
              codalmacen: 'ALM1',
            }),
          })
          if (res.status === 201 || res.status === 200) {
            ids.add(((await res.json()) as { id: string }).id)
            done++
            return
          }
          await res.arrayBuffer()
          if (res.status < 500 || attempt > 60) throw new Error(`write ${i}: ${res.status}`)
        } catch (err) {
          if (attempt > 60) throw err
        }
        retries++
        await new Promise((r) => setTimeout(r, 250))
      }
    }
    let next = 0
    const workers = Array.from({ length: 4 }, async () => {
      while (next < total) await write(next++)
    })
    await waitFor(() => done >= total / 3, {
      what: 'a third of the writes',
      timeoutMs: 120_000,
      intervalMs: 1000,
    })
    await disturb()
    await Promise.all(workers)
    const recorded = Number(sql(`SELECT count(*) FROM patients.patients WHERE idempresa = ${company}`))
    const audit = () =>
      sql(
        `SELECT count(*), count(DISTINCT resource_id) FROM audit.events WHERE idempresa = ${company} AND action = 'patient.created'`,
      )
        .split('|')
        .map(Number)
    await waitFor(() => audit()[0]! >= total, {
      what: 'audit to record every write',
      timeoutMs: 180_000,
      intervalMs: 1000,
    })
    const [audited, distinct] = audit()
    return { total, answered: ids.size, recorded, audited, distinct, retries }
  }

  it('loses no write and duplicates none when a patients replica is killed under a stream of writes', async () => {
    const victim = containersOf('patients')[1]!
    const r = await writesUnder(8, async () => {
      await docker('kill', victim)
    })
    process.stderr.write(`compose: patients replica ${victim} killed under writes: ${JSON.stringify(r)}\n`)
    expect([r.answered, r.recorded, r.audited, r.distinct]).toEqual([r.total, r.total, r.total, r.total])
  })

  it('runs the broker as three nodes: one stopped under writes and started again loses nothing, and the services reconnect', async () => {
    const status = JSON.parse(
      compose(['exec', '-T', 'rabbitmq', 'rabbitmqctl', '-q', 'cluster_status', '--formatter', 'json']).out,
    )
    expect([...status.running_nodes].sort()).toEqual(NODES.map((n) => `rabbit@${n}`))
    const [node] = containersOf('rabbitmq')
    const since = new Date().toISOString()
    const r = await writesUnder(9, async () => {
      await docker('stop', '-t', '10', node!)
      await new Promise((resolve) => setTimeout(resolve, 10_000))
      await docker('start', node!)
    })
    process.stderr.write(
      `compose: broker node ${node} stopped under writes and started again: ${JSON.stringify(r)}\n`,
    )
    expect([r.answered, r.recorded, r.audited, r.distinct]).toEqual([r.total, r.total, r.total, r.total])
    // The replicas that were on the stopped node connected again by themselves (those on another
    // node kept their connection), and every replica is still healthy.
    const reconnected = ['patients', 'audit', 'webhooks']
      .flatMap((s) => containersOf(s))
      .filter((name) => /"msg":"AMQP connected"/.test(run('docker', ['logs', '--since', since, name]).out))
    process.stderr.write(`compose: reconnected after the node stopped: ${reconnected.join(', ')}\n`)
    expect(reconnected.length).toBeGreaterThan(0)
    for (const s of ['patients', 'audit', 'webhooks'])
      for (const name of containersOf(s))
        expect([
          name,
          run('docker', ['inspect', '--format', '{{.State.Health.Status}}', name]).out.trim(),
        ]).toEqual([name, 'healthy'])
    await waitFor(
      () => {
        const again = JSON.parse(
          compose(['exec', '-T', 'rabbitmq-2', 'rabbitmqctl', '-q', 'cluster_status', '--formatter', 'json'])
            .out,
        )
        return again.running_nodes.length === 3
      },
      { what: 'the node to run again in the cluster', timeoutMs: 120_000, intervalMs: 1000 },
    )
  })

  it('leaves nothing behind after down -v', () => {
    compose(['down', '-v', '--remove-orphans', '-t', '5'])
    const left = (kind: string[]) =>
      run('docker', [...kind, '--filter', `label=com.docker.compose.project=${PROJECT}`, '-q']).out.trim()
    expect(left(['ps', '-a'])).toBe('')
    expect(left(['volume', 'ls'])).toBe('')
    expect(left(['network', 'ls'])).toBe('')
  })
})
