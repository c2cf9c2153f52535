// deploy/compose/compose.yaml (x-env ports and URLs, one migrate-<name> and one <name> entry per
// service with its assertion keys and resource limits, broker-users' passwords) and
// deploy/compose/.env.example (each service's database and broker passwords, the assertion keys).
import { apps, envName, namesOf, serviceList } from '../lib.mjs'
import { assertionKeysOf, read, section } from './common.mjs'

const resources = serviceList.services
const required = (v, what = '') => `\${${v}:?set ${v}${what} in deploy/compose/.env}`
/** Compose: the service's own DATABASE_URL, the same in its migration (which makes the role) and in it. */
function databaseUrl(name) {
  const { loginRole, env } = namesOf(name)
  return `      DATABASE_URL: postgres://${loginRole}:${required(env.dbPassword)}@postgres:5432/clinic`
}
/**
 * Its own broker user (whose password broker-users sets): the broker vouches for the origin of what
 * it publishes (user_id), so no service holds a key of another's.
 */
const broker = (name) => [
  `      AMQP_URL: amqp://${namesOf(name).brokerUser}:${required(namesOf(name).env.amqpPassword)}@rabbitmq:5672/clinic`,
]

/**
 * Its assertion keys (deploy/README.md, "Assertion keys"), from services.json: the gateway's private
 * key to the gateway alone, its public key to every other service; a calling service (`calls`) its
 * own private key; a called service the public key of each of its callers.
 */
function assertionKeys(name) {
  const k = assertionKeysOf(name)
  const key = (v, what) => required(v, ` (${what})`)
  return [
    ...(k.gatewaySigning
      ? [`      GATEWAY_SIGNING_KEY: ${key('GATEWAY_SIGNING_KEY', 'Ed25519 private key')}`]
      : []),
    ...(k.gatewayVerify
      ? [`      GATEWAY_VERIFY_KEY: ${key('GATEWAY_VERIFY_KEY', 'Ed25519 public key')}`]
      : []),
    ...(k.serviceSigning
      ? [`      SERVICE_SIGNING_KEY: ${key(envName(name, 'SERVICE_SIGNING_KEY'), 'Ed25519 private key')}`]
      : []),
    ...(k.callers.length
      ? [
          `      SERVICE_VERIFY_KEYS: ${k.callers.map((c) => `${c}=${required(envName(c, 'SERVICE_VERIFY_KEY'))}`).join(',')}`,
        ]
      : []),
  ]
}

/** Limits of every long-running container (Compose `deploy.resources`), as the Kubernetes ones. */
const RESOURCES = {
  gateway: { limits: ['1', '512M'], reservations: ['0.2', '192M'] },
  service: { limits: ['1', '512M'], reservations: ['0.1', '160M'] },
}
const limits = (name) => {
  const r = RESOURCES[name] ?? RESOURCES.service
  return [
    '      resources:',
    `        limits: { cpus: '${r.limits[0]}', memory: ${r.limits[1]} }`,
    `        reservations: { cpus: '${r.reservations[0]}', memory: ${r.reservations[1]} }`,
  ]
}

const healthcheck = (port) => [
  '    healthcheck:',
  '      test:',
  '        [',
  "          'CMD',",
  "          'node',",
  "          '-e',",
  `          "fetch('http://127.0.0.1:${port}/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))",`,
  '        ]',
  '      <<: *healthcheck',
]
const image = (name) => [
  `    image: ${namesOf(name).image}:\${TAG:-local}`,
  '    build:',
  '      <<: *build',
  '      args:',
  `        SERVICE: ${name}`,
]

/** What a service needs beyond the common entry, in Compose (Kubernetes: services/<name>/patch.yaml). */
const extras = {
  gateway: {
    environment: [
      '      # Shared by all gateway replicas, so the per-token limit holds however many run; the',
      '      # password is the one the redis service requires (requirepass).',
      `      REDIS_URL: redis://:${required('REDIS_PASSWORD')}@redis:6379`,
      '      RATE_LIMIT_PER_MINUTE: ${RATE_LIMIT_PER_MINUTE:-600}',
      '      RATE_LIMIT_PER_ADDRESS_PER_MINUTE: ${RATE_LIMIT_PER_ADDRESS_PER_MINUTE:-3000}',
      '      CORS_ORIGINS: ${CORS_ORIGINS:-}',
      '      # The base of FHIR links and fullUrls: the gateway as the public reaches it.',
      `      PUBLIC_BASE_URL: ${required('PUBLIC_BASE_URL', " (the gateway's public address, https://...)")}`,
    ],
    more: [
      '    # Loopback only by default; GATEWAY_PUBLISH_ADDR=0.0.0.0 to reach it from other machines.',
      '    # One replica: it publishes the port.',
      '    ports:',
      `      - '\${GATEWAY_PUBLISH_ADDR:-127.0.0.1}:\${GATEWAY_PUBLISH_PORT:-${serviceList.gateway.port}}:${serviceList.gateway.port}'`,
    ],
    dependsOn: [
      '      redis:',
      '        condition: service_healthy',
      ...resources.flatMap((s) => [`      ${s.name}:`, '        condition: service_healthy']),
    ],
  },
  comms: {
    environment: [
      '      # Its providers: comms refuses to start without them (COMMS_DELIVERY=files is development only).',
      `      SMTP_URL: ${required('SMTP_URL', ' (smtps://user:password@host:465)')}`,
      `      TWILIO_ACCOUNT_SID: ${required('TWILIO_ACCOUNT_SID')}`,
      `      TWILIO_AUTH_TOKEN: ${required('TWILIO_AUTH_TOKEN')}`,
      `      TWILIO_FROM: ${required('TWILIO_FROM', ' (the sender number, E.164)')}`,
      '      # Signs patient and unsubscribe links; only comms gets it. Keep it: rotating it voids the links out.',
      `      COMMS_LINK_SECRET: ${required('COMMS_LINK_SECRET', ' (32+ characters)')}`,
      '      # Where people open those links: the gateway as the public reaches it.',
      `      PUBLIC_BASE_URL: ${required('PUBLIC_BASE_URL', " (the gateway's public address, https://...)")}`,
    ],
  },
  documents: {
    environment: [
      '      # Signs consent links; only documents gets it. Keep it: rotating it voids the links out.',
      `      DOCUMENTS_LINK_SECRET: ${required('DOCUMENTS_LINK_SECRET', ' (32+ characters)')}`,
      '      # Where people open those links: the gateway as the public reaches it.',
      `      PUBLIC_BASE_URL: ${required('PUBLIC_BASE_URL', " (the gateway's public address, https://...)")}`,
    ],
  },
  audit: {
    environment: [
      '      # The key of its hash chain: audit only. Keep it outside the database, and keep it.',
      `      AUDIT_CHAIN_KEY: ${required('AUDIT_CHAIN_KEY', ' (32+ characters)')}`,
      '      # Signed checkpoints of the chain heads, outside the database: a volume of their own.',
      '      AUDIT_CHECKPOINT_FILE: /var/lib/clinic/audit-checkpoints.jsonl',
      '      AUDIT_CHECKPOINT_INTERVAL_SECONDS: ${AUDIT_CHECKPOINT_INTERVAL_SECONDS:-300}',
    ],
    more: ['    volumes:', '      - audit-checkpoints:/var/lib/clinic'],
  },
  webhooks: {
    environment: [
      "      # Seals the endpoints' signing secrets in the database; only webhooks gets it. Keep it.",
      `      WEBHOOKS_SECRET_KEY: ${required('WEBHOOKS_SECRET_KEY', ' (32+ characters)')}`,
      '      # Development only: plain http and private or loopback receivers.',
      '      WEBHOOKS_ALLOW_INSECURE: ${WEBHOOKS_ALLOW_INSECURE:-false}',
    ],
  },
}

const migration = (s) => [
  `  migrate-${s.name}:`,
  '    <<: *migrate',
  ...image(s.name),
  '    environment:',
  '      <<: *owner',
  databaseUrl(s.name),
  '',
]

function service(s) {
  const x = extras[s.name] ?? {}
  return [
    `  ${s.name}:`,
    '    <<: *service',
    ...image(s.name),
    '    environment:',
    '      <<: *env',
    databaseUrl(s.name),
    ...broker(s.name),
    ...assertionKeys(s.name),
    ...(x.environment ?? []),
    ...(x.more ?? []),
    '    deploy:',
    ...(s === serviceList.gateway ? [] : [`      replicas: ${s.replicas.min}`]),
    ...limits(s.name),
    '    depends_on:',
    '      <<: *infra',
    '      broker-users:',
    '        condition: service_completed_successfully',
    `      migrate-${s.name}:`,
    '        condition: service_completed_successfully',
    ...(x.dependsOn ?? []),
    ...healthcheck(s.port),
    '',
  ]
}

export function compose() {
  const file = 'deploy/compose/compose.yaml'
  let text = section(
    read(file),
    'env',
    [
      ...apps.map((s) => `  ${namesOf(s).env.port}: '${s.port}'`),
      ...resources.map((s) => `  ${namesOf(s).env.url}: http://${s.name}:${s.port}`),
    ],
    file,
  )
  text = section(text, 'migrations', apps.flatMap(migration).slice(0, -1), file)
  text = section(
    text,
    'broker-passwords',
    apps.map((s) => `      ${namesOf(s).env.amqpPassword}: ${required(namesOf(s).env.amqpPassword)}`),
    file,
  )
  // Services first, the gateway last (it waits for them).
  return section(text, 'services', [...resources, serviceList.gateway].flatMap(service).slice(0, -1), file)
}

export function composeEnvExample() {
  const file = 'deploy/compose/.env.example'
  const lines = (what, value) => apps.map((s) => `${namesOf(s).env[what]}=${value(s.name)}`)
  let text = section(
    read(file),
    'db-passwords',
    lines('dbPassword', (n) => `change-me-db-${n}`),
    file,
  )
  text = section(
    text,
    'amqp-passwords',
    lines('amqpPassword', (n) => `change-me-amqp-${n}`),
    file,
  )
  const callers = apps.filter((s) => assertionKeysOf(s.name).serviceSigning)
  return section(
    text,
    'assertion-keys',
    [
      'GATEWAY_SIGNING_KEY=change-me-gateway-ed25519-private-key-base64url-pkcs8-der',
      'GATEWAY_VERIFY_KEY=change-me-gateway-ed25519-public-key-base64url-spki-der',
      ...callers.flatMap((s) => [
        `${envName(s, 'SERVICE_SIGNING_KEY')}=change-me-${s.name}-ed25519-private-key-base64url-pkcs8-der`,
        `${envName(s, 'SERVICE_VERIFY_KEY')}=change-me-${s.name}-ed25519-public-key-base64url-spki-der`,
      ]),
    ],
    file,
  )
}
