// comms' delivery in the deployment files (DESIGN.md section 12): production names its providers.
// A Compose or Kubernetes file never sets COMMS_DELIVERY=files (messages written to files, for
// development only), and gives comms SMTP_URL, TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM
// (or TWILIO_MESSAGING_SERVICE_SID) as required settings: comms refuses to start without them.

/** What comms' providers need, each required: SMTP, then Twilio's account and token. */
export const PROVIDER_VARS = ['SMTP_URL', 'TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN']
/** Twilio's sender: a number, or a messaging service. */
export const SENDER_VARS = ['TWILIO_FROM', 'TWILIO_MESSAGING_SERVICE_SID']

const FILES = 'files'

/**
 * Compose: `raw` and `resolved` are each service's environment before and after ${VAR} interpolation
 * with .env.example. A provider variable must be set, and required in the file (`${VAR:?...}` or a
 * value), never defaulted (`${VAR:-}` lets comms start without it).
 */
export function checkComposeDelivery(raw, resolved, problems) {
  for (const [name, env] of Object.entries(resolved))
    if (String(env.COMMS_DELIVERY ?? '').trim() === FILES)
      problems.push(`${name}: COMMS_DELIVERY=files is for development only; name comms' providers instead`)
  const comms = resolved.comms
  if (!comms) return
  const required = (k) => {
    const r = raw.comms?.[k]
    const value = String(comms[k] ?? '').trim()
    if (!value) return `${k} not set`
    if (typeof r === 'string' && /\$\{[A-Z0-9_]+:?[-+]/.test(r))
      return `${k} has a default (${r}); make it required: \${${k}:?...}`
    return null
  }
  for (const k of PROVIDER_VARS) {
    const p = required(k)
    if (p) problems.push(`comms: ${p} (its provider is required in production)`)
  }
  const senders = SENDER_VARS.map(required)
  if (senders.every(Boolean))
    problems.push(`comms: ${SENDER_VARS.join(' or ')} not set as a required setting (${senders[0]})`)
}

/**
 * Kubernetes: `all` the rendered objects. No ConfigMap or container sets COMMS_DELIVERY=files; the
 * comms Deployment's container reads each provider variable from a Secret key that is not optional
 * (or a non-empty value, or a ConfigMap it loads).
 */
export function checkK8sDelivery(all, ctx, problemsOf) {
  for (const o of all) {
    if (o.kind === 'ConfigMap' && String(o.data?.COMMS_DELIVERY ?? '').trim() === FILES)
      problemsOf(o).push(`ConfigMap ${o.metadata?.name}: COMMS_DELIVERY=files is for development only`)
    const pod = o.spec?.template?.spec ?? {}
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])])
      for (const e of c.env ?? [])
        if (e.name === 'COMMS_DELIVERY' && String(e.value ?? '').trim() === FILES)
          problemsOf(o).push(
            `${o.kind} ${o.metadata?.name} container ${c.name}: COMMS_DELIVERY=files is for development only`,
          )
  }
  const d = all.find((o) => o.kind === 'Deployment' && o.metadata?.name === 'comms')
  if (!d) return
  const main = (d.spec?.template?.spec?.containers ?? []).find((c) => c.name === 'comms')
  const fromConfigMaps = Object.assign(
    {},
    ...(main?.envFrom ?? []).map((ef) => ctx.configMapData.get(ef.configMapRef?.name) ?? {}),
  )
  const provided = (k) => {
    const e = (main?.env ?? []).find((x) => x.name === k)
    if (e?.valueFrom?.secretKeyRef)
      return e.valueFrom.secretKeyRef.optional === true
        ? `${k} comes from an optional Secret key; make it required`
        : null
    if (e) return String(e.value ?? '').trim() ? null : `${k} is empty`
    return String(fromConfigMaps[k] ?? '').trim() ? null : `${k} not provided`
  }
  const problems = problemsOf(d)
  for (const k of PROVIDER_VARS) {
    const p = provided(k)
    if (p) problems.push(`Deployment comms: ${p} (its provider is required in production)`)
  }
  const senders = SENDER_VARS.map(provided)
  if (senders.every(Boolean))
    problems.push(`Deployment comms: ${SENDER_VARS.join(' or ')} must be provided (${senders[0]})`)
}
