// deploy/k8s/redis.example.yaml (not applied by the kustomization: for a cluster without a managed
// Redis): the image pinned by digest, a password from clinic-secrets required by a config line
// (never on the command line),
// the restricted pod hardening, and only the gateway's pods let in.
import { pinProblem } from './images.mjs'
import { checkPodSecurity } from './k8s-rules.mjs'

export function checkRedisExample(docs, ctx, problems) {
  const d = docs.find((o) => o.kind === 'Deployment')
  if (!d) return problems.push('no Deployment redis')
  const pod = d.spec?.template?.spec ?? {}
  checkPodSecurity(pod, `Deployment ${d.metadata?.name}`, problems)
  for (const c of pod.containers ?? []) {
    const where = `Deployment ${d.metadata?.name} container ${c.name}`
    const pin = pinProblem(c.image)
    if (pin) problems.push(`${where}: ${pin}`)
    // The password reaches redis-server as a config line its shell writes from the environment
    // (`requirepass $VAR`, read on stdin): never in argv (checkPodSecurity refuses that).
    const script = [...(c.command ?? []), ...(c.args ?? [])].join('\n')
    const ref = /^requirepass "?\$\{?(\w+)\}?"?$/m.exec(script)?.[1]
    const from = (c.env ?? []).find((e) => e.name === ref)?.valueFrom?.secretKeyRef
    if (!ref || !from) problems.push(`${where}: no \`requirepass $VAR\` config line, VAR from a Secret key`)
    else if (!ctx.secrets.get(from.name)?.has(from.key))
      problems.push(`${where}: secret ${from.name}/${from.key} is not in secret.example.yaml`)
    const sc = c.securityContext ?? {}
    if (sc.readOnlyRootFilesystem !== true || sc.allowPrivilegeEscalation !== false)
      problems.push(`${where}: readOnlyRootFilesystem true and allowPrivilegeEscalation false`)
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: must drop ALL capabilities`)
    if (!c.resources?.limits?.memory) problems.push(`${where}: resources.limits.memory not set`)
  }
  const ingress = docs.filter((o) => o.kind === 'NetworkPolicy').flatMap((p) => p.spec?.ingress ?? [])
  const peers = ingress.flatMap((r) => r.from ?? [])
  if (
    !peers.length ||
    peers.some(
      (f) =>
        f.namespaceSelector ||
        f.ipBlock ||
        f.podSelector?.matchLabels?.['app.kubernetes.io/name'] !== 'gateway',
    )
  )
    problems.push("NetworkPolicy: only the gateway's pods may reach redis")
}
