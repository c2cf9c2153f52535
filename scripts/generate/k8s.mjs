// deploy/k8s: configmap.yaml (ports and URLs), secret.example.yaml (each service's <NAME>_DATABASE_URL,
// _AMQP_URL and _EVENT_SIGNING_SECRET, audit's EVENT_VERIFY_KEYS), kustomization.yaml (resources and
// images), services/<name>/{values,kustomization}.yaml, and networkpolicy.yaml (who reaches whom).
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

export function networkPolicy() {
  const gw = serviceList.gateway
  const calls = resources
    .filter((s) => callersOf(s.name).length > 1)
    .map((s) => `#   ${callersOf(s.name).slice(1).join(', ').padEnd(18)} -> ${s.name} ${s.port}`)
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
    '',
  ].join('\n')
}
