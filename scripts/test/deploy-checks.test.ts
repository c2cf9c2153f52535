import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/**
 * deploy/check.mjs on a copy of what it reads, each copy broken on purpose: the checks pass on the
 * committed files and fail, naming the problem, on an image without a digest, a Deployment without
 * an egress policy, an ipBlock open to the cloud metadata address, the database or broker port open
 * to every address, the monitoring namespace on an
 * API port, the gateway's signing key given to another service, a secret defaulting to the examples'
 * placeholder, a long-running container without limits, a Redis password on a command line, and
 * broker definitions that give a service more than it needs (configure, a read of the dead-letter
 * exchange, a write to a retry exchange) or a classic queue.
 */
const ROOT = path.resolve(__dirname, '../..')
const SERVICES = [
  'gateway',
  'patients',
  'appointments',
  'comms',
  'audit',
  'webhooks',
  'clinical',
  'documents',
]

function copyOfRepo(): string {
  const copy = mkdtempSync(path.join(tmpdir(), 'clinic-deploy-checks-'))
  const files = [
    'deploy',
    'scripts',
    'Dockerfile',
    '.dockerignore',
    'package.json',
    'VERSION',
    'packages/platform/services.json',
    'packages/platform/naming.cjs',
    'packages/platform/topology.cjs',
    'packages/platform/src/service.ts',
    'packages/platform/src/contracts',
    ...SERVICES.flatMap((s) => [`services/${s}/package.json`, `services/${s}/src/config.ts`]),
  ]
  for (const p of files) cpSync(path.join(ROOT, p), path.join(copy, p), { recursive: true })
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'))
  return copy
}

/** Replaces `from` in the file (it must be there: a mutation that changes nothing proves nothing). */
function edit(copy: string, file: string, from: string | RegExp, to: string | ((m: string) => string)) {
  const p = path.join(copy, file)
  const text = readFileSync(p, 'utf8')
  const out = text.replace(from, to as string)
  if (out === text) throw new Error(`${file}: ${String(from)} not found`)
  writeFileSync(p, out)
}

/** The block of a Compose service (its lines up to the next blank line). */
const composeService = (name: string) => new RegExp(`\\n  ${name}:\\n[\\s\\S]*?\\n\\n`)

function check(copy: string, ...only: string[]) {
  const r = spawnSync(process.execPath, [path.join(copy, 'deploy/check.mjs'), ...only], {
    cwd: copy,
    encoding: 'utf8',
  })
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` }
}

describe('deploy checks', () => {
  const copies: string[] = []
  const fresh = () => {
    const c = copyOfRepo()
    copies.push(c)
    return c
  }
  afterAll(() => copies.forEach((c) => rmSync(c, { recursive: true, force: true })))

  it('pass on the committed Dockerfile, Compose and Kubernetes files', () => {
    const r = check(fresh(), 'dockerfile', 'compose', 'k8s')
    expect(r.out).toContain('deploy checks: all passed')
    expect(r.status).toBe(0)
  })

  it('fail on a Dockerfile FROM without a digest', () => {
    const copy = fresh()
    edit(
      copy,
      'Dockerfile',
      /^ARG NODE_IMAGE=node:24-slim@sha256:[0-9a-f]{64}$/m,
      'ARG NODE_IMAGE=node:24-slim',
    )
    const r = check(copy, 'dockerfile')
    expect(r.status).toBe(1)
    expect(r.out).toContain('stage FROM image node:24-slim is not pinned by digest')
  })

  describe('broker definitions', () => {
    let r: { status: number | null; out: string }
    beforeAll(() => {
      const copy = fresh()
      const file = 'deploy/rabbitmq/definitions.json'
      const defs = JSON.parse(readFileSync(path.join(copy, file), 'utf8'))
      const comms = defs.permissions.find((p: { user: string }) => p.user === 'clinic-comms')
      // As they were: configure on the shared exchanges; now also the dead letters and a way back.
      comms.configure = '^clinic\\.events(\\.dlx)?$'
      comms.read = '^(comms\\.reminders|clinic\\.events\\.dlx)$'
      comms.write = '^(clinic\\.events|clinic\\.events\\.dlx|comms\\.reminders\\.back)$'
      defs.queues.find((q: { name: string }) => q.name === 'audit.events').arguments['x-queue-type'] =
        'classic'
      defs.exchanges.find((e: { name: string }) => e.name === 'audit.events.back').internal = false
      writeFileSync(path.join(copy, file), JSON.stringify(defs))
      r = check(copy, 'rabbitmq')
    })

    it('fail', () => expect(r.status).toBe(1))
    it('on a service that configures', () =>
      expect(r.out).toContain(
        'clinic-comms: configures ^clinic\\.events(\\.dlx)?$; services configure nothing',
      ))
    it('on a read of the dead-letter exchange', () =>
      expect(r.out).toContain('clinic-comms: may read clinic.events.dlx'))
    it('on a write to a way back', () =>
      expect(r.out).toContain('clinic-comms: may write to comms.reminders.back'))
    it('on a classic queue', () => expect(r.out).toContain('queue audit.events: not a quorum queue'))
    it('on a way back clients may publish to', () =>
      expect(r.out).toContain('exchange audit.events.back: missing or not internal'))
  })

  describe('Compose', () => {
    let r: { status: number | null; out: string }
    beforeAll(() => {
      const copy = fresh()
      const file = 'deploy/compose/compose.yaml'
      edit(copy, file, /(redis:7[\w.-]*)@sha256:[0-9a-f]{64}/, '$1')
      // Redis as it was: the password interpolated into its command line.
      edit(
        copy,
        file,
        / {6}- \|\n {8}exec docker-entrypoint\.sh redis-server - ([^<]*)<<EOF\n {8}requirepass \$\$REDIS_PASSWORD\n {8}EOF\n/,
        "      - exec redis-server $1--requirepass '${REDIS_PASSWORD:?set it}'\n",
      )
      // A healthcheck with a secret on its command line.
      edit(
        copy,
        file,
        /test: \['CMD-SHELL', 'redis-cli ping \| grep -qx PONG'\]/,
        "test: ['CMD-SHELL', 'redis-cli -a ${REDIS_PASSWORD:?set it} ping | grep -qx PONG']",
      )
      edit(copy, file, composeService('patients'), (block) =>
        block
          .replace(/ {6}resources:\n(?: {8}.*\n)+/, '')
          .replace(
            /( {6}GATEWAY_VERIFY_KEY: .*\n)/,
            '$1      GATEWAY_SIGNING_KEY: ${GATEWAY_SIGNING_KEY:?set GATEWAY_SIGNING_KEY}\n',
          ),
      )
      edit(
        copy,
        file,
        /WEBHOOKS_SECRET_KEY: \$\{WEBHOOKS_SECRET_KEY:\?[^}]*\}/,
        'WEBHOOKS_SECRET_KEY: ${WEBHOOKS_SECRET_KEY:-change-me-webhooks-secret-key-of-32-characters}',
      )
      r = check(copy, 'compose')
    })

    it('fails', () => expect(r.status).toBe(1))
    it('on a third-party image without a digest', () =>
      expect(r.out).toMatch(/redis: image redis:7[\w.-]* is not pinned by digest/))
    it('on a secret that defaults to the placeholder', () =>
      expect(r.out).toContain('webhooks: WEBHOOKS_SECRET_KEY defaults to a placeholder (change-me...)'))
    it("on the gateway's signing key given to another service", () =>
      expect(r.out).toContain("patients: GATEWAY_SIGNING_KEY is the gateway's only"))
    it('on a long-running container without limits', () => {
      expect(r.out).toContain('patients: deploy.resources.limits.cpus not set')
      expect(r.out).toContain('patients: deploy.resources.limits.memory not set')
    })
    it('on a Redis password on a command line', () => {
      expect(r.out).toContain('redis: command has --requirepass: the password would be on its command line')
      expect(r.out).toContain(
        'redis: command interpolates REDIS_PASSWORD: the secret would be on its command line',
      )
      expect(r.out).toContain(
        'redis: healthcheck interpolates REDIS_PASSWORD: the secret would be on its command line',
      )
      expect(r.out).toContain('redis: no `requirepass $VAR` config line with VAR in its environment')
    })
  })

  describe('Kubernetes', () => {
    let r: { status: number | null; out: string }
    beforeAll(() => {
      const copy = fresh()
      const policies = 'deploy/k8s/networkpolicy.yaml'
      edit(copy, policies, /---\n[^-]*?name: patients-egress\n[\s\S]*?(?=---\n)/, '')
      edit(copy, policies, /(name: comms-egress\n[\s\S]*?)'169\.254\.0\.0\/16',\s*/, '$1')
      // PostgreSQL at every address (the rule as it was), RabbitMQ at 0.0.0.0/0.
      edit(
        copy,
        policies,
        /(name: audit-egress\n[\s\S]*?)- to:\n\s*- ipBlock:\n\s*cidr: '10\.20\.0\.0\/24'\n\s*ports:/,
        '$1- ports:',
      )
      edit(copy, policies, /(name: webhooks-egress\n[\s\S]*?cidr: )'10\.20\.1\.0\/24'/, "$1'0.0.0.0/0'")
      edit(
        copy,
        policies,
        /(name: appointments-from-[\s\S]*?kubernetes\.io\/metadata\.name: monitoring\n\s*ports:\n\s*- port: )9082/,
        '$18082',
      )
      edit(
        copy,
        'deploy/k8s/services/webhooks/patch.yaml',
        /( +)- name: WEBHOOKS_SECRET_KEY\n/,
        '$1- name: GATEWAY_SIGNING_KEY\n$1  valueFrom:\n$1    secretKeyRef: { name: clinic-secrets, key: GATEWAY_SIGNING_KEY }\n' +
          '$1- name: WEBHOOKS_ALLOW_INSECURE\n$1  value: change-me\n$&',
      )
      // Redis as it was: the kubelet expands $(REDIS_PASSWORD) into argv.
      edit(
        copy,
        'deploy/k8s/redis.example.yaml',
        / {10}command:\n {12}- sh\n {12}- -c\n {12}- \|\n(?: {14}.*\n)+/,
        "          command: ['redis-server']\n          args: ['--requirepass', '$(REDIS_PASSWORD)']\n",
      )
      r = check(copy, 'k8s')
    })

    it('fails', () => expect(r.status).toBe(1))
    it('on a Deployment no egress policy selects', () =>
      expect(r.out).toContain('Deployment patients: no egress policy selects its pods'))
    it('on an internet egress open to the cloud metadata address', () =>
      expect(r.out).toContain('NetworkPolicy comms-egress: ipBlock 0.0.0.0/0 must except 169.254.0.0/16'))
    it('on PostgreSQL, RabbitMQ or Redis ports open to every address', () => {
      expect(r.out).toContain(
        'NetworkPolicy audit-egress: TCP 5432 to every address: a rule without `to` (only DNS may; name where PostgreSQL, RabbitMQ and Redis are)',
      )
      expect(r.out).toContain(
        'NetworkPolicy webhooks-egress: ipBlock 0.0.0.0/0 on 5671, 5672: every address; name the network they are on',
      )
    })
    it('on the monitoring namespace allowed to an API port', () =>
      expect(r.out).toMatch(
        /the monitoring namespace reaches appointments beyond its metrics port 9082 \(8082\)/,
      ))
    it("on the gateway's signing key read by another Deployment", () =>
      expect(r.out).toContain(
        "Deployment webhooks container webhooks: GATEWAY_SIGNING_KEY is the gateway's only",
      ))
    it("on a Secret's value on a command line", () => {
      expect(r.out).toContain(
        "Deployment redis container redis: $(REDIS_PASSWORD) puts a Secret's value on the command line",
      )
      expect(r.out).toContain(
        'Deployment redis container redis: --requirepass puts the password on the command line',
      )
      expect(r.out).toContain('Deployment redis container redis: no `requirepass $VAR` config line')
    })
    it('on a placeholder in the applied manifests', () =>
      expect(r.out).toContain('WEBHOOKS_ALLOW_INSECURE is a placeholder (change-me...)'))
  })
})
