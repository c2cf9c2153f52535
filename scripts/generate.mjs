// Writes what must be literal from packages/platform/services.json (the one list of services):
//   tsconfig.json                                  project references
//   .env.example                                   the ports and URLs section
//   deploy/compose/compose.yaml                    x-env ports and URLs, one migrate-<name> and one
//                                                  <name> entry per service, broker-users' passwords
//   deploy/compose/.env.example                    each service's database and broker passwords and
//                                                  event signing key
//   deploy/k8s/configmap.yaml                      the ports and URLs section
//   deploy/k8s/secret.example.yaml                 each service's <NAME>_DATABASE_URL, _AMQP_URL and
//                                                  _EVENT_SIGNING_SECRET, audit's EVENT_VERIFY_KEYS
//   deploy/k8s/kustomization.yaml                  resources and images
//   deploy/k8s/services/<name>/{values,kustomization}.yaml   name, port, replicas, env prefix
//                                                  (+ patch.yaml if present)
//
//   node scripts/generate.mjs          rewrite the files
//   node scripts/generate.mjs --check  exit 1 naming every committed file that differs (npm test, deploy checks)
//
// Sections inside hand-written files sit between `BEGIN GENERATED <id>` and `END GENERATED <id>` lines.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { apps, root, serviceList } from './lib.mjs'

const upper = (name) => name.toUpperCase().replace(/-/g, '_')
const read = (file) => (existsSync(path.join(root, file)) ? readFileSync(path.join(root, file), 'utf8') : '')
const resources = serviceList.services
/** A service's own database login role (its migration makes it; the owner is POSTGRES_USER, clinic). */
const loginRole = (name) => `clinic_${name.replace(/-/g, '_')}`
const dbPassword = (name) => `${upper(name)}_DB_PASSWORD`
/** Compose: the service's own DATABASE_URL, the same in its migration (which makes the role) and in it. */
const composeDatabaseUrl = (name) =>
  `      DATABASE_URL: postgres://${loginRole(name)}:\${${dbPassword(name)}:?set ${dbPassword(name)} in deploy/compose/.env}@postgres:5432/clinic`
/** A service's own broker user (deploy/rabbitmq/definitions.json), whose password broker-users sets. */
const brokerUser = (name) => `clinic-${name}`
const amqpPassword = (name) => `${upper(name)}_AMQP_PASSWORD`
const required = (v, what = '') => `\${${v}:?set ${v}${what} in deploy/compose/.env}`
/** The key a service signs its events with; audit checks each source with that source's key. */
const eventKey = (name) => `${upper(name)}_EVENT_SIGNING_SECRET`
const composeBroker = (name) => [
  `      AMQP_URL: amqp://${brokerUser(name)}:${required(amqpPassword(name))}@rabbitmq:5672/clinic`,
  `      EVENT_SIGNING_SECRET: ${required(eventKey(name), ' (32+ characters)')}`,
  ...(name === 'audit'
    ? [`      EVENT_VERIFY_KEYS: ${apps.map((s) => `${s.name}=${required(eventKey(s.name))}`).join(',')}`]
    : []),
]

/** Replaces the lines between the BEGIN/END GENERATED <id> markers of `text`. */
function section(text, id, lines, file) {
  const re = new RegExp(
    `(\\n[^\\n]*BEGIN GENERATED ${id}\\b[^\\n]*\\n)[\\s\\S]*?(\\n?[^\\n]*END GENERATED ${id}\\b)`,
  )
  if (!re.test(text)) throw new Error(`${file}: no BEGIN/END GENERATED ${id} markers`)
  return text.replace(re, (_, begin, end) => `${begin}${lines.join('\n')}\n${end.replace(/^\n/, '')}`)
}

function tsconfig() {
  const refs = ['packages/platform', ...apps.map((s) => `services/${s.name}`)]
  return `{\n  "files": [],\n  "references": [\n${refs.map((r) => `    { "path": "${r}" }`).join(',\n')}\n  ]\n}\n`
}

function envExample() {
  const file = '.env.example'
  return section(
    read(file),
    'ports',
    [
      ...apps.map((s) => `${upper(s.name)}_PORT=${s.port}`),
      ...resources.map((s) => `${upper(s.name)}_URL=http://127.0.0.1:${s.port}`),
    ],
    file,
  )
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
  `    image: clinic/${name}:\${TAG:-local}`,
  '    build:',
  '      <<: *build',
  '      args:',
  `        SERVICE: ${name}`,
]

/** What a service needs beyond the common entry, in Compose (Kubernetes: services/<name>/patch.yaml). */
const composeExtras = {
  gateway: {
    environment: [
      '      # Shared by all gateway replicas, so the per-token limit holds however many run.',
      '      REDIS_URL: redis://redis:6379',
      '      RATE_LIMIT_PER_MINUTE: ${RATE_LIMIT_PER_MINUTE:-600}',
      '      RATE_LIMIT_PER_ADDRESS_PER_MINUTE: ${RATE_LIMIT_PER_ADDRESS_PER_MINUTE:-3000}',
      '      CORS_ORIGINS: ${CORS_ORIGINS:-}',
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
      '      # Unset: messages are written as files under /app/var/outbox (the comms-outbox volume).',
      '      SMTP_URL: ${SMTP_URL:-}',
      '      TWILIO_ACCOUNT_SID: ${TWILIO_ACCOUNT_SID:-}',
      '      TWILIO_AUTH_TOKEN: ${TWILIO_AUTH_TOKEN:-}',
      '      TWILIO_FROM: ${TWILIO_FROM:-}',
    ],
    more: ['    volumes:', '      - comms-outbox:/app/var'],
  },
}

function compose() {
  const file = 'deploy/compose/compose.yaml'
  let text = section(
    read(file),
    'env',
    [
      ...apps.map((s) => `  ${upper(s.name)}_PORT: '${s.port}'`),
      ...resources.map((s) => `  ${upper(s.name)}_URL: http://${s.name}:${s.port}`),
    ],
    file,
  )
  const migrations = apps.flatMap((s) => [
    `  migrate-${s.name}:`,
    '    <<: *migrate',
    ...image(s.name),
    '    environment:',
    '      <<: *owner',
    composeDatabaseUrl(s.name),
    '',
  ])
  // Services first, the gateway last (it waits for them).
  const entries = [...resources, serviceList.gateway].flatMap((s) => {
    const x = composeExtras[s.name] ?? {}
    return [
      `  ${s.name}:`,
      '    <<: *service',
      ...image(s.name),
      '    environment:',
      '      <<: *env',
      composeDatabaseUrl(s.name),
      ...composeBroker(s.name),
      ...(x.environment ?? []),
      ...(x.more ?? []),
      ...(s === serviceList.gateway ? [] : ['    deploy:', `      replicas: ${s.replicas.min}`]),
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
  })
  text = section(text, 'migrations', migrations.slice(0, -1), file)
  text = section(
    text,
    'broker-passwords',
    apps.map((s) => `      ${amqpPassword(s.name)}: ${required(amqpPassword(s.name))}`),
    file,
  )
  return section(text, 'services', entries.slice(0, -1), file)
}

function composeEnvExample() {
  const file = 'deploy/compose/.env.example'
  let text = section(
    read(file),
    'db-passwords',
    apps.map((s) => `${dbPassword(s.name)}=change-me-db-${s.name}`),
    file,
  )
  text = section(
    text,
    'amqp-passwords',
    apps.map((s) => `${amqpPassword(s.name)}=change-me-amqp-${s.name}`),
    file,
  )
  return section(
    text,
    'event-keys',
    apps.map((s) => `${eventKey(s.name)}=change-me-events-${s.name}-to-64-hex-characters-from-openssl`),
    file,
  )
}

function secretExample() {
  const file = 'deploy/k8s/secret.example.yaml'
  const text = section(
    read(file),
    'database',
    apps.map(
      (s) =>
        `  ${upper(s.name)}_DATABASE_URL: postgres://${loginRole(s.name)}:CHANGE_ME@postgres.example.internal:5432/clinic?sslmode=require`,
    ),
    file,
  )
  const keyPlaceholder = (name) =>
    `CHANGE_ME_${upper(name)}_EVENT_KEY_64_HEX_CHARACTERS_FROM_OPENSSL_RAND_HEX_32`
  return section(
    text,
    'broker',
    [
      ...apps.map(
        (s) =>
          `  ${upper(s.name)}_AMQP_URL: amqps://${brokerUser(s.name)}:CHANGE_ME@rabbitmq.example.internal:5671/clinic`,
      ),
      ...apps.map((s) => `  ${eventKey(s.name)}: ${keyPlaceholder(s.name)}`),
      `  EVENT_VERIFY_KEYS: ${apps.map((s) => `${s.name}=${keyPlaceholder(s.name)}`).join(',')}`,
    ],
    file,
  )
}

function configMap() {
  const file = 'deploy/k8s/configmap.yaml'
  return section(
    read(file),
    'ports',
    [
      ...apps.map((s) => `  ${upper(s.name)}_PORT: '${s.port}'`),
      '  # Kubernetes Services of the same namespace: one name, N replicas behind it.',
      ...resources.map((s) => `  ${upper(s.name)}_URL: http://${s.name}:${s.port}`),
    ],
    file,
  )
}

function kustomization() {
  const tag = read('VERSION').trim()
  return [
    '# Generated by `node scripts/generate.mjs` from packages/platform/services.json: do not edit.',
    '# kubectl apply -k deploy/k8s   (render only: kubectl kustomize deploy/k8s)',
    '# The Secrets clinic-secrets and clinic-migration-secrets are not here on purpose: create them',
    '# first (see secret.example.yaml). Releases: deploy/README.md (migration Jobs, then the rest).',
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    'namespace: clinic',
    '',
    'labels:',
    '  - pairs:',
    '      app.kubernetes.io/part-of: clinic',
    '    includeSelectors: false',
    '    includeTemplates: true',
    '',
    'resources:',
    '  - namespace.yaml',
    '  - configmap.yaml',
    ...apps.map((s) => `  - services/${s.name}`),
    '  - ingress.yaml',
    '  - networkpolicy.yaml',
    '',
    '# One tag per release: the CalVer of the VERSION file. Point newName at your registry.',
    'images:',
    ...apps.flatMap((s) => [
      `  - name: clinic/${s.name}`,
      `    newName: registry.example.com/clinic/${s.name}`,
      `    newTag: '${tag}'`,
    ]),
    '',
  ].join('\n')
}

function k8sService(s) {
  const dir = `deploy/k8s/services/${s.name}`
  const patch = existsSync(path.join(root, dir, 'patch.yaml'))
  const head = '# Generated by `node scripts/generate.mjs` from packages/platform/services.json: do not edit.'
  return {
    [`${dir}/values.yaml`]: [
      head,
      '# Read by the service component (deploy/k8s/components/service), left out of the output.',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      `  name: ${s.name}-values`,
      '  annotations:',
      "    config.kubernetes.io/local-config: 'true'",
      'data:',
      `  name: ${s.name}`,
      `  port: '${s.port}'`,
      '  # Its DATABASE_URL is the key <env_prefix>_DATABASE_URL of the Secret clinic-secrets.',
      `  env_prefix: ${upper(s.name)}`,
      `  min_replicas: '${s.replicas.min}'`,
      `  max_replicas: '${s.replicas.max}'`,
      '',
    ].join('\n'),
    [`${dir}/kustomization.yaml`]: [
      head,
      ...(patch ? [`# What ${s.name} adds to the component is in patch.yaml (hand-written).`] : []),
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      '  - values.yaml',
      'components:',
      '  - ../../components/service',
      ...(patch ? ['patches:', '  - path: patch.yaml'] : []),
      '',
    ].join('\n'),
  }
}

/** Every generated file: path (from the root) -> content, formatted the way prettier keeps it. */
export async function generate() {
  const files = {
    'tsconfig.json': tsconfig(),
    '.env.example': envExample(),
    'deploy/compose/compose.yaml': compose(),
    'deploy/compose/.env.example': composeEnvExample(),
    'deploy/k8s/configmap.yaml': configMap(),
    'deploy/k8s/secret.example.yaml': secretExample(),
    'deploy/k8s/kustomization.yaml': kustomization(),
    ...Object.assign({}, ...apps.map(k8sService)),
  }
  const prettier = await import('prettier')
  for (const [file, text] of Object.entries(files)) {
    const filepath = path.join(root, file)
    const info = await prettier.getFileInfo(filepath, { ignorePath: path.join(root, '.prettierignore') })
    if (info.ignored || !info.inferredParser) continue
    const options = (await prettier.resolveConfig(filepath)) ?? {}
    files[file] = await prettier.format(text, { ...options, filepath })
  }
  return files
}

/** The generated files whose committed content differs (or that are missing). */
export async function stale() {
  const files = await generate()
  return Object.keys(files).filter((f) => read(f) !== files[f])
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--check')) {
    const list = await stale()
    for (const f of list) console.error(`${f} is stale: run node scripts/generate.mjs`)
    if (list.length) process.exit(1)
    console.log('generated files match packages/platform/services.json')
  } else {
    for (const [file, text] of Object.entries(await generate())) {
      if (read(file) === text) continue
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
      writeFileSync(path.join(root, file), text)
      console.log(`wrote ${file}`)
    }
  }
}
