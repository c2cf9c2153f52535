// deploy/k8s/networkpolicy.yaml: who reaches whom, and where each pod may go, from services.json.
// Default deny both ways; then per service: ingress from its callers on its API port and from the
// monitoring namespace on its metrics port only; egress to DNS, PostgreSQL, RabbitMQ (where
// DESTINATIONS says they are), the services it calls (the gateway: every resource service, and Redis), and for the services whose work is the
// internet (comms, webhooks) public addresses on their ports only. The deploy checks
// (deploy/checks/k8s-network.mjs) read the same constants.
import { serviceList } from '../lib.mjs'
import { HEAD, serviceCallers } from './common.mjs'

const resources = serviceList.services
const gateway = serviceList.gateway

/** Where a service answers GET /metrics, apart from its API: its port + 1000 (METRICS_PORT). */
export const metricsPort = (s) => s.port + 1000

/** Who calls each resource service: the gateway (it routes every family), then services.json `calls`. */
export const callersOf = (name) => ['gateway', ...serviceCallers(name)]

/** What each service calls inside the cluster: the gateway every resource service, the others `calls`. */
export const calleesOf = (name) =>
  name === gateway.name ? resources.map((s) => s.name) : (resources.find((s) => s.name === name)?.calls ?? [])

/**
 * The services whose work is calling out to the internet, and on which ports (TCP): comms to Twilio's
 * API (443) and its SMTP relay (465 smtps, 587 submission), webhooks to integrators' https URLs.
 * Only these get an ipBlock; every address they may reach is public (NON_PUBLIC is left out).
 */
export const INTERNET_EGRESS = { comms: [443, 465, 587], webhooks: [443] }

/** Never reached from an internet-egress pod: private, shared (CGNAT), loopback, link-local (cloud metadata 169.254.169.254). */
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

/** The cluster's DNS (kube-dns / CoreDNS keep this label), the one resolver every pod may ask. */
export const DNS = {
  namespace: 'kube-system',
  labels: { 'k8s-app': 'kube-dns' },
  ports: [
    [53, 'UDP'],
    [53, 'TCP'],
  ],
}
export const DATABASE_PORTS = [5432]
export const BROKER_PORTS = [5671, 5672]
export const REDIS_PORTS = [6379]

/**
 * Where PostgreSQL, RabbitMQ (amqps, amqp) and the gateway's Redis are: the only destinations their
 * ports are opened to. A NetworkPolicy cannot name a host, so a service outside the cluster (a
 * managed one, what the Secret's URLs point at) is its network (`cidr`, as narrow as it is), one
 * inside by its pods (`labels`, in this namespace unless `namespace` says another). Set these to
 * where yours are, then `npm run generate`. The defaults: PostgreSQL and RabbitMQ on private subnets
 * of their own, Redis as k8s/redis.example.yaml runs it.
 */
export const DESTINATIONS = {
  PostgreSQL: { ports: DATABASE_PORTS, peers: [{ cidr: '10.20.0.0/24' }] },
  RabbitMQ: { ports: BROKER_PORTS, peers: [{ cidr: '10.20.1.0/24' }] },
  Redis: { ports: REDIS_PORTS, peers: [{ labels: { 'app.kubernetes.io/name': 'redis' } }] },
}

const podPeer = (name, indent = '        ') => [
  `${indent}- podSelector:`,
  `${indent}    matchLabels:`,
  `${indent}      app.kubernetes.io/name: ${name}`,
]
const monitoringPeer = [
  '        - namespaceSelector:',
  '            matchLabels:',
  '              kubernetes.io/metadata.name: monitoring',
]
const ports = (list) => [
  '      ports:',
  ...list.flatMap(([port, protocol = 'TCP']) => [
    `        - port: ${port}`,
    `          protocol: ${protocol}`,
  ]),
]
const tcp = (list) => list.map((p) => [p, 'TCP'])
/** A rule to one of DESTINATIONS: its peers, on its TCP ports only. */
const destinationRule = (name) => {
  const { ports: list, peers } = DESTINATIONS[name]
  return [
    '    - to:',
    ...peers.flatMap((peer) =>
      peer.cidr
        ? ['        - ipBlock:', `            cidr: '${peer.cidr}'`]
        : [
            ...(peer.namespace
              ? [
                  '        - namespaceSelector:',
                  '            matchLabels:',
                  `              kubernetes.io/metadata.name: ${peer.namespace}`,
                  '          podSelector:',
                ]
              : ['        - podSelector:']),
            '            matchLabels:',
            ...Object.entries(peer.labels).map(([k, v]) => `              ${k}: ${v}`),
          ],
    ),
    ...ports(tcp(list)),
  ]
}
const policyHead = (name, selector, type) => [
  '---',
  'apiVersion: networking.k8s.io/v1',
  'kind: NetworkPolicy',
  'metadata:',
  `  name: ${name}`,
  'spec:',
  '  podSelector:',
  '    matchLabels:',
  ...Object.entries(selector).map(([k, v]) => `      ${k}: ${v}`),
  `  policyTypes: [${type}]`,
]

/** Ingress of a service: `from` on its API port; the monitoring namespace on its metrics port only. */
const ingressPolicy = (name, s, from) => [
  ...policyHead(name, { 'app.kubernetes.io/name': s.name }, 'Ingress'),
  '  ingress:',
  ...from,
  ...ports([[s.port]]),
  '    # Prometheus (namespace monitoring): GET /metrics on the metrics port, never the API port.',
  '    - from:',
  ...monitoringPeer,
  ...ports([[metricsPort(s)]]),
]

const dnsRule = [
  "    # DNS: the cluster's resolver only.",
  '    - to:',
  '        - namespaceSelector:',
  '            matchLabels:',
  `              kubernetes.io/metadata.name: ${DNS.namespace}`,
  '          podSelector:',
  '            matchLabels:',
  ...Object.entries(DNS.labels).map(([k, v]) => `              ${k}: ${v}`),
  ...ports(DNS.ports),
]

/** Egress of a service: DNS, database and broker, what it calls, and the internet if its work is there. */
function egressPolicy(s) {
  const internet = INTERNET_EGRESS[s.name]
  return [
    ...policyHead(`${s.name}-egress`, { 'app.kubernetes.io/name': s.name }, 'Egress'),
    '  egress:',
    ...dnsRule,
    '    # PostgreSQL, then RabbitMQ (amqps, amqp): where they are (DESTINATIONS), nowhere else.',
    ...destinationRule('PostgreSQL'),
    ...destinationRule('RabbitMQ'),
    ...(s.name === gateway.name
      ? [
          "    # Redis (REDIS_URL): the rate limiter's counters, shared by the gateway replicas.",
          ...destinationRule('Redis'),
        ]
      : []),
    ...calleesOf(s.name).flatMap((c) => [
      `    # ${s.name === gateway.name ? 'It routes to' : 'Its signed service calls (services.json calls)'}: ${c}.`,
      '    - to:',
      ...podPeer(c),
      ...ports([[resources.find((r) => r.name === c).port]]),
    ]),
    ...(internet
      ? [
          '    # The internet: public addresses only, never a private, loopback or link-local one (cloud',
          `    # metadata 169.254.169.254), on ${INTERNET_EGRESS[s.name].join(', ')} only.`,
          '    - to:',
          ...Object.entries(NON_PUBLIC).flatMap(([cidr, except]) => [
            '        - ipBlock:',
            `            cidr: '${cidr}'`,
            `            except: [${except.map((c) => `'${c}'`).join(', ')}]`,
          ]),
          ...ports(tcp(internet)),
        ]
      : []),
  ]
}

/** The migration Jobs: DNS and PostgreSQL, nothing else. */
const migrateEgress = [
  ...policyHead('migrate-egress', { 'app.kubernetes.io/component': 'migrate' }, 'Egress'),
  '  egress:',
  ...dnsRule,
  '    # PostgreSQL (MIGRATION_DATABASE_URL, DATABASE_URL).',
  ...destinationRule('PostgreSQL'),
]

export function networkPolicy() {
  const calls = resources
    .filter((s) => callersOf(s.name).length > 1)
    .map((s) => `#   ${callersOf(s.name).slice(1).join(', ').padEnd(18)} -> ${s.name} ${s.port}`)
  return [
    HEAD,
    '# Who may reach what inside the cluster, and where each pod may go (needs a CNI that enforces',
    '# NetworkPolicy: Calico, Cilium...). Nothing reaches a pod and a pod reaches nothing unless a policy',
    "# below lets it. Ingress, on the pod's own port (services.json; `calls`: the signed service calls of",
    '# services/*/src/clients):',
    `#   ingress controller -> gateway ${gateway.port}`,
    `#   gateway            -> ${resources.map((s) => `${s.name} ${s.port}`).join(', ')}`,
    ...calls,
    `#   monitoring namespace -> every pod's metrics port (its port + 1000: ${[gateway, ...resources].map((s) => metricsPort(s)).join(', ')}), never the API port`,
    '# Egress: every pod DNS (kube-dns), PostgreSQL (5432) and RabbitMQ (5671, 5672) where they are;',
    '# the gateway Redis (6379) and the services it routes to, a service the services it calls; the',
    '# migration Jobs DNS and PostgreSQL only:',
    ...Object.entries(DESTINATIONS).map(
      ([name, d]) =>
        `#   ${name.padEnd(18)} -> ${d.peers.map((p) => p.cidr ?? Object.values(p.labels).join(',') + ' pods').join(', ')} ${d.ports.join(', ')}`,
    ),
    '# The internet, public addresses only (no private, loopback or link-local one: not the cloud',
    '# metadata address):',
    ...Object.entries(INTERNET_EGRESS).map(
      ([name, list]) => `#   ${name.padEnd(18)} -> internet ${list.join(', ')}`,
    ),
    'apiVersion: networking.k8s.io/v1',
    'kind: NetworkPolicy',
    'metadata:',
    '  name: default-deny-ingress',
    'spec:',
    '  podSelector: {}',
    '  policyTypes: [Ingress]',
    '---',
    'apiVersion: networking.k8s.io/v1',
    'kind: NetworkPolicy',
    'metadata:',
    '  name: default-deny-egress',
    'spec:',
    '  podSelector: {}',
    '  policyTypes: [Egress]',
    ...ingressPolicy('gateway-from-ingress', gateway, [
      "    # The ingress-nginx controller's pods (one `from` entry: that namespace AND those pods).",
      '    - from:',
      '        - namespaceSelector:',
      '            matchLabels:',
      '              kubernetes.io/metadata.name: ingress-nginx',
      '          podSelector:',
      '            matchLabels:',
      '              app.kubernetes.io/name: ingress-nginx',
    ]),
    ...resources.flatMap((s) =>
      ingressPolicy(`${s.name}-from-${callersOf(s.name).join('-')}`, s, [
        '    - from:',
        ...callersOf(s.name).flatMap((c) => podPeer(c)),
      ]),
    ),
    ...[gateway, ...resources].flatMap(egressPolicy),
    ...migrateEgress,
    '',
  ].join('\n')
}
