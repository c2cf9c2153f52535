// deploy/k8s: configmap.yaml (ports and URLs), secret.example.yaml (each service's <NAME>_DATABASE_URL,
// and _AMQP_URL, the assertion keys), kustomization.yaml (resources and images), services/<name>/{values,kustomization}.yaml (the
// kustomization patches in the service's assertion keys), and networkpolicy.yaml (networkpolicy.mjs).
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { apps, envName, namesOf, root, serviceList } from '../lib.mjs'
import { HEAD, assertionKeysOf, read, section } from './common.mjs'
import { metricsPort } from './networkpolicy.mjs'

export { networkPolicy } from './networkpolicy.mjs'

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
  const withBroker = section(
    text,
    'broker',
    [
      ...apps.map(
        (s) =>
          `  ${namesOf(s).env.amqpUrl}: amqps://${namesOf(s).brokerUser}:CHANGE_ME@rabbitmq.example.internal:5671/clinic`,
      ),
    ],
    file,
  )
  const publicKey = (n) => `CHANGE_ME_${envName(n, 'ED25519_PUBLIC_KEY_BASE64URL_SPKI_DER')}`
  return section(
    withBroker,
    'assertion-keys',
    [
      '  GATEWAY_SIGNING_KEY: CHANGE_ME_GATEWAY_ED25519_PRIVATE_KEY_BASE64URL_PKCS8_DER',
      `  GATEWAY_VERIFY_KEY: ${publicKey('gateway')}`,
      ...apps
        .filter((s) => assertionKeysOf(s.name).serviceSigning)
        .map(
          (s) =>
            `  ${envName(s, 'SERVICE_SIGNING_KEY')}: CHANGE_ME_${envName(s, 'ED25519_PRIVATE_KEY_BASE64URL_PKCS8_DER')}`,
        ),
      ...apps
        .filter((s) => assertionKeysOf(s.name).callers.length)
        .map(
          (s) =>
            `  ${envName(s, 'SERVICE_VERIFY_KEYS')}: ${assertionKeysOf(s.name)
              .callers.map((c) => `${c}=${publicKey(c)}`)
              .join(',')}`,
        ),
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

/** A strategic-merge patch of the service's container: its assertion keys, key by key from clinic-secrets. */
function assertionKeysPatch(s) {
  const k = assertionKeysOf(s.name)
  const env = [
    ...(k.gatewaySigning ? [['GATEWAY_SIGNING_KEY', 'GATEWAY_SIGNING_KEY']] : []),
    ...(k.gatewayVerify ? [['GATEWAY_VERIFY_KEY', 'GATEWAY_VERIFY_KEY']] : []),
    ...(k.serviceSigning ? [['SERVICE_SIGNING_KEY', envName(s, 'SERVICE_SIGNING_KEY')]] : []),
    ...(k.callers.length ? [['SERVICE_VERIFY_KEYS', envName(s, 'SERVICE_VERIFY_KEYS')]] : []),
  ]
  return [
    '  # Its assertion keys (deploy/README.md, "Assertion keys"), from services.json:',
    `  # ${
      k.gatewaySigning
        ? "the gateway's private key"
        : `the gateway's public key${k.serviceSigning ? ', its own private key (it calls others)' : ''}${
            k.callers.length ? `, its callers' public keys (${k.callers.join(', ')})` : ''
          }`
    }.`,
    '  - patch: |-',
    '      apiVersion: apps/v1',
    '      kind: Deployment',
    '      metadata:',
    `        name: ${s.name}`,
    '      spec:',
    '        template:',
    '          spec:',
    '            containers:',
    `              - name: ${s.name}`,
    '                env:',
    ...env.flatMap(([name, key]) => [
      `                  - name: ${name}`,
      '                    valueFrom:',
      `                      secretKeyRef: { name: clinic-secrets, key: ${key} }`,
    ]),
  ]
}

export function k8sService(s) {
  const dir = `deploy/k8s/services/${s.name}`
  const patch = existsSync(path.join(root, dir, 'patch.yaml'))
  // Hand-written objects of the service (audit: its checkpoints' volume claim), beside the generated files.
  const own = existsSync(path.join(root, dir))
    ? readdirSync(path.join(root, dir))
        .filter((f) => /\.yaml$/.test(f) && !['values.yaml', 'kustomization.yaml', 'patch.yaml'].includes(f))
        .sort()
    : []
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
      '  # GET /metrics only (METRICS_PORT): what the monitoring namespace may reach, not the API port.',
      `  metrics_port: '${metricsPort(s)}'`,
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
      ...own.map((f) => `  - ${f}`),
      'components:',
      '  - ../../components/service',
      'patches:',
      ...(patch ? ['  - path: patch.yaml'] : []),
      ...assertionKeysPatch(s),
      '',
    ].join('\n'),
  }
}
