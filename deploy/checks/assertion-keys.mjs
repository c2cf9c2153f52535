// The assertion keys (deploy/README.md, "Assertion keys"), in Compose and Kubernetes, against
// services.json: the gateway's private key (GATEWAY_SIGNING_KEY) reaches the gateway and nothing
// else; every other service gets its public key (GATEWAY_VERIFY_KEY); a service that calls others
// (`calls`) signs with a private key of its own (SERVICE_SIGNING_KEY), and a service others call
// checks exactly its callers' public keys (SERVICE_VERIFY_KEYS). The shared HMAC secret these keys
// replace (INTERNAL_AUTH_SECRET) is in no file at all.
import { assertionKeysOf } from '../../scripts/generate/common.mjs'
import { SERVICES, envName } from './lib.mjs'

export const RETIRED = ['INTERNAL_AUTH_SECRET']

const names = (list) =>
  String(list ?? '')
    .split(',')
    .filter(Boolean)
    .map((e) => e.slice(0, e.indexOf('=')).trim())
const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort())

/**
 * Compose. services: the interpolated `services:`; raw: the same before interpolation; envOf(service)
 * its environment as an object.
 */
export function checkComposeAssertionKeys(services, raw, envOf, problems) {
  const signingKeys = new Map()
  for (const [name, svc] of Object.entries(services)) {
    const e = envOf(svc)
    for (const v of RETIRED) if (v in e) problems.push(`${name}: ${v} is retired (Ed25519 assertion keys)`)
    if ('GATEWAY_SIGNING_KEY' in e && name !== 'gateway')
      problems.push(
        `${name}: GATEWAY_SIGNING_KEY is the gateway's only (whoever holds it can sign as the gateway)`,
      )
    if (!SERVICES.includes(name)) {
      for (const v of ['SERVICE_SIGNING_KEY', 'GATEWAY_VERIFY_KEY', 'SERVICE_VERIFY_KEYS'])
        if (v in e) problems.push(`${name}: ${v} is for the services only`)
      continue
    }
    const k = assertionKeysOf(name)
    const r = envOf(raw[name] ?? {})
    if (k.gatewaySigning && !e.GATEWAY_SIGNING_KEY) problems.push(`${name}: GATEWAY_SIGNING_KEY not set`)
    if (k.gatewayVerify !== Boolean(e.GATEWAY_VERIFY_KEY))
      problems.push(
        `${name}: GATEWAY_VERIFY_KEY ${k.gatewayVerify ? 'not set' : "is for the gateway's callees"}`,
      )
    if (k.serviceSigning) {
      const own = envName(name, 'SERVICE_SIGNING_KEY')
      if (!String(r.SERVICE_SIGNING_KEY ?? '').includes(`\${${own}`))
        problems.push(`${name}: SERVICE_SIGNING_KEY must be its own, \${${own}:?...}`)
      const key = String(e.SERVICE_SIGNING_KEY ?? '')
      if ([...signingKeys.values()].includes(key) || key === String(e.GATEWAY_SIGNING_KEY ?? ''))
        problems.push(`${name}: SERVICE_SIGNING_KEY is another's`)
      signingKeys.set(name, key)
    } else if ('SERVICE_SIGNING_KEY' in e)
      problems.push(`${name}: SERVICE_SIGNING_KEY, but it calls no service (services.json calls)`)
    // Exactly its callers, each with that caller's public key.
    if (!same(names(e.SERVICE_VERIFY_KEYS), k.callers))
      problems.push(
        `${name}: SERVICE_VERIFY_KEYS names ${names(e.SERVICE_VERIFY_KEYS).join(', ') || 'nobody'}; its callers are ${k.callers.join(', ') || 'none'}`,
      )
    for (const c of k.callers)
      if (!String(r.SERVICE_VERIFY_KEYS ?? '').includes(`${c}=\${${envName(c, 'SERVICE_VERIFY_KEY')}`))
        problems.push(
          `${name}: SERVICE_VERIFY_KEYS must give ${c} \${${envName(c, 'SERVICE_VERIFY_KEY')}:?...}`,
        )
  }
}

/** Kubernetes: the containers of every rendered object; the Secret keys each assertion variable reads. */
export function checkK8sAssertionKeys(all, problemsOf) {
  for (const o of all) {
    const pod = o.spec?.template?.spec ?? {}
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      const env = new Map((c.env ?? []).map((e) => [e.name, e]))
      const where = `${o.kind} ${o.metadata?.name} container ${c.name}`
      for (const v of RETIRED)
        if (env.has(v)) problemsOf(o).push(`${where}: ${v} is retired (Ed25519 assertion keys)`)
      const reads = [...env.values()].some((e) => e.valueFrom?.secretKeyRef?.key === 'GATEWAY_SIGNING_KEY')
      if (
        (env.has('GATEWAY_SIGNING_KEY') || reads) &&
        !(o.kind === 'Deployment' && o.metadata?.name === 'gateway')
      )
        problemsOf(o).push(`${where}: GATEWAY_SIGNING_KEY is the gateway's only`)
    }
  }
  for (const d of all.filter((o) => o.kind === 'Deployment' && SERVICES.includes(o.metadata?.name))) {
    const name = d.metadata.name
    const main = (d.spec?.template?.spec?.containers ?? []).find((c) => c.name === name)
    const key = (v) => (main?.env ?? []).find((e) => e.name === v)?.valueFrom?.secretKeyRef?.key
    const k = assertionKeysOf(name)
    const want = {
      GATEWAY_SIGNING_KEY: k.gatewaySigning ? 'GATEWAY_SIGNING_KEY' : undefined,
      GATEWAY_VERIFY_KEY: k.gatewayVerify ? 'GATEWAY_VERIFY_KEY' : undefined,
      SERVICE_SIGNING_KEY: k.serviceSigning ? envName(name, 'SERVICE_SIGNING_KEY') : undefined,
      SERVICE_VERIFY_KEYS: k.callers.length ? envName(name, 'SERVICE_VERIFY_KEYS') : undefined,
    }
    for (const [v, secretKey] of Object.entries(want))
      if (key(v) !== secretKey)
        problemsOf(d).push(
          secretKey
            ? `Deployment ${name}: ${v} must come from the Secret key ${secretKey}`
            : `Deployment ${name}: ${v} is not its (services.json calls)`,
        )
  }
}

/** secret.example.yaml: each called service's verify keys name exactly its callers. */
export function checkSecretAssertionKeys(secrets, problems) {
  const app = secrets.find((s) => s.metadata?.name === 'clinic-secrets')?.stringData ?? {}
  for (const v of RETIRED)
    if (v in app) problems.push(`clinic-secrets: ${v} is retired (Ed25519 assertion keys)`)
  for (const s of SERVICES) {
    const callers = assertionKeysOf(s).callers
    const k = envName(s, 'SERVICE_VERIFY_KEYS')
    if (callers.length && !same(names(app[k]), callers))
      problems.push(`clinic-secrets: ${k} must name ${callers.join(', ')} (its callers)`)
  }
}
