// deploy/k8s: configmap.yaml (ports and URLs), secret.example.yaml (each service's <NAME>_DATABASE_URL,
// _AMQP_URL and _EVENT_SIGNING_SECRET, the EVENT_VERIFY_KEYS of audit and webhooks), kustomization.yaml
// (resources and images), services/<name>/{values,kustomization}.yaml, and networkpolicy.yaml (who
// reaches whom; and where the services that call out to the internet may go: webhooks).
import { existsSync } from 'node:fs'
import path from 'node:path'
import { apps, namesOf, root, serviceList } from '../lib.mjs'
import { HEAD, read, section } from './common.mjs'

const resources = serviceList.services

export function secretExample() {
  const file = 'deploy/k8s/secret.example.yaml'
  const text = section(
    read(file),
    'database',
    apps.map(
      (s) =>
        `  ${namesOf(s).env.databaseUrl}: postgres://${namesOf(s).loginRole}:CHANGE_ME@postgres.example.internal:5432/clinic?sslmode=require`,
    ),
    file,
  )
  const keyPlaceholder = (s) =>
    `CHANGE_ME_${namesOf(s).envPrefix}_EVENT_KEY_64_HEX_CHARACTERS_FROM_OPENSSL_RAND_HEX_32`
  return section(
    text,
    'broker',
    [
      ...apps.map(
        (s) =>
          `  ${namesOf(s).env.amqpUrl}: amqps://${namesOf(s).brokerUser}:CHANGE_ME@rabbitmq.example.internal:5671/clinic`,
      ),
      ...apps.map((s) => `  ${namesOf(s).env.eventSigningSecret}: ${keyPlaceholder(s)}`),
      `  EVENT_VERIFY_KEYS: ${apps.map((s) => `${s.name}=${keyPlaceholder(s)}`).join(',')}`,
    ],
    file,
  )
}

export function configMap() {
  const file = 'deploy/k8s/configmap.yaml'
  return section(
    read(file),
    'ports',
    [
      ...apps.map((s) => `  ${namesOf(s).env.port}: '${s.port}'`),
      '  # Kubernetes Services of the same namespace: one name, N replicas behind it.',
      ...resources.map((s) => `  ${namesOf(s).env.url}: http://${s.name}:${s.port}`),
    ],
    file,
  )
}

export function kustomization() {
  const tag = read('VERSION').trim()
  return [
    HEAD,
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
      `  - name: ${namesOf(s).image}`,
      `    newName: registry.example.com/${namesOf(s).image}`,
      `    newTag: '${tag}'`,
    ]),
    '',
  ].join('\n')
}

export function k8sService(s) {
  const dir = `deploy/k8s/services/${s.name}`
  const patch = existsSync(path.join(root, dir, 'patch.yaml'))
  return {
    [`${dir}/values.yaml`]: [
      HEAD,
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
      `  env_prefix: ${namesOf(s).envPrefix}`,
      `  min_replicas: '${s.replicas.min}'`,
      `  max_replicas: '${s.replicas.max}'`,
      '',
    ].join('\n'),
    [`${dir}/kustomization.yaml`]: [
      HEAD,
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

/** Who calls each resource service: the gateway (it routes every family), then services.json `calls`. */
export function callersOf(name) {
  return ['gateway', ...resources.filter((s) => (s.calls ?? []).includes(name)).map((s) => s.name)]
}

const pods = (name) => [
  '        - podSelector:',
  '            matchLabels:',
  `              app.kubernetes.io/name: ${name}`,
]
const monitoring = [
  '        - namespaceSelector:',
  '            matchLabels:',
  '              kubernetes.io/metadata.name: monitoring',
]
const policy = (name, target, from, port) => [
  '---',
  'apiVersion: networking.k8s.io/v1',
  'kind: NetworkPolicy',
  'metadata:',
  `  name: ${name}`,
  'spec:',
  '  podSelector:',
  '    matchLabels:',
  `      app.kubernetes.io/name: ${target}`,
  '  policyTypes: [Ingress]',
  '  ingress:',
  ...from,
  '      ports:',
  `        - port: ${port}`,
  '          protocol: TCP',
]

/**
 * The services whose work is calling out to the internet, and on which port: their pods get an egress
 * policy (any other pod's egress is not restricted). webhooks delivers to integrators' https URLs.
 */
export const INTERNET_EGRESS = { webhooks: 443 }

/** Never reached from an internet-egress pod: private, shared (CGNAT), loopback, link-local (cloud metadata). */
export const NON_PUBLIC = {
  '0.0.0.0/0': [
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.168.0.0/16',
  ],
  '::/0': ['::1/128', 'fc00::/7', 'fe80::/10'],
}
/** What every pod needs whatever else its egress policy says: DNS, PostgreSQL, RabbitMQ (amqps, amqp). */
export const BASE_EGRESS_PORTS = { UDP: [53], TCP: [53, 5432, 5671, 5672] }

const egressPolicy = (s, port) => [
  '---',
  'apiVersion: networking.k8s.io/v1',
  'kind: NetworkPolicy',
  'metadata:',
  `  name: ${s.name}-egress`,
  'spec:',
  '  podSelector:',
  '    matchLabels:',
  `      app.kubernetes.io/name: ${s.name}`,
  '  policyTypes: [Egress]',
  '  egress:',
  '    # DNS, PostgreSQL and RabbitMQ, wherever the Secret points them (another port: add it here).',
  '    - ports:',
  ...Object.entries(BASE_EGRESS_PORTS).flatMap(([protocol, ports]) =>
    ports.flatMap((p) => [`        - port: ${p}`, `          protocol: ${protocol}`]),
  ),
  ...(s.calls ?? []).flatMap((c) => [
    `    # Its signed service calls (services.json calls): ${c}.`,
    '    - to:',
    ...pods(c),
    '      ports:',
    `        - port: ${resources.find((r) => r.name === c).port}`,
    '          protocol: TCP',
  ]),
  '    # The internet: any public address, never a private, loopback or link-local one (cloud',
  '    # metadata); the service refuses those addresses itself too.',
  '    - to:',
  ...Object.entries(NON_PUBLIC).flatMap(([cidr, except]) => [
    '        - ipBlock:',
    `            cidr: '${cidr}'`,
    `            except: [${except.map((c) => `'${c}'`).join(', ')}]`,
  ]),
  '      ports:',
  `        - port: ${port}`,
  '          protocol: TCP',
]

export function networkPolicy() {
  const gw = serviceList.gateway
  const calls = resources
    .filter((s) => callersOf(s.name).length > 1)
    .map((s) => `#   ${callersOf(s.name).slice(1).join(', ').padEnd(18)} -> ${s.name} ${s.port}`)
  const internet = resources.filter((s) => INTERNET_EGRESS[s.name])
  return [
    HEAD,
    '# Who may reach what inside the cluster (needs a CNI that enforces NetworkPolicy: Calico, Cilium...).',
    "# Nothing reaches a pod of the namespace unless a policy below lets it, and then only on the pod's",
    '# own port (services.json; `calls`: the signed service calls of services/*/src/clients):',
    `#   ingress controller -> gateway ${gw.port}`,
    `#   gateway            -> ${resources.map((s) => `${s.name} ${s.port}`).join(', ')}`,
    ...calls,
    "#   monitoring namespace -> every pod's port   (Prometheus scrapes /metrics)",
    '# Any other pod, of the clinic or not, reaches no service, its /metrics or its /openapi.json (which',
    '# the services also refuse, 404, to addresses outside INTERNAL_NETWORKS without an assertion).',
    ...(internet.length
      ? [
          '# Egress is open but for the services that call out to the internet, which reach only DNS,',
          '# PostgreSQL, RabbitMQ, the services they call, and public addresses on one port:',
          ...internet.map(
            (s) => `#   ${s.name.padEnd(18)} -> internet ${INTERNET_EGRESS[s.name]} (no private address)`,
          ),
        ]
      : []),
    'apiVersion: networking.k8s.io/v1',
    'kind: NetworkPolicy',
    'metadata:',
    '  name: default-deny-ingress',
    'spec:',
    '  podSelector: {}',
    '  policyTypes: [Ingress]',
    ...policy(
      'gateway-from-ingress',
      'gateway',
      [
        "    # The ingress-nginx controller's pods (one `from` entry: that namespace AND those pods).",
        '    - from:',
        '        - namespaceSelector:',
        '            matchLabels:',
        '              kubernetes.io/metadata.name: ingress-nginx',
        '          podSelector:',
        '            matchLabels:',
        '              app.kubernetes.io/name: ingress-nginx',
        ...monitoring,
      ],
      gw.port,
    ),
    ...resources.flatMap((s) =>
      policy(
        `${s.name}-from-${callersOf(s.name).join('-')}`,
        s.name,
        ['    - from:', ...callersOf(s.name).flatMap(pods), ...monitoring],
        s.port,
      ),
    ),
    ...internet.flatMap((s) => egressPolicy(s, INTERNET_EGRESS[s.name])),
    '',
  ].join('\n')
}
