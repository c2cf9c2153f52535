// Rules for the Kubernetes objects: Deployments (probes, resources, securityContext, ...), containers,
// NetworkPolicies. API types: k8s-types.mjs; migration Jobs and Secrets: k8s-migrations.mjs.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { NON_PUBLIC, BASE_EGRESS_PORTS } from '../../scripts/generate/k8s.mjs'
import { PORTS, SERVICES, envName, get, read, requiredVars, root } from './lib.mjs'

export function checkDeployment(d, ctx, problems) {
  const name = d.metadata?.name
  const spec = d.spec ?? {}
  const pod = spec.template?.spec ?? {}
  const port = PORTS[name]
  if (!SERVICES.includes(name)) problems.push(`Deployment ${name}: not one of the services`)
  if (!(spec.replicas >= 2)) problems.push(`Deployment ${name}: replicas must be 2 or more`)
  const sel = spec.selector?.matchLabels ?? {}
  const labels = spec.template?.metadata?.labels ?? {}
  if (!Object.keys(sel).length || Object.entries(sel).some(([k, v]) => labels[k] !== v))
    problems.push(`Deployment ${name}: selector does not match the pod labels`)
  if (!pod.topologySpreadConstraints?.length)
    problems.push(`Deployment ${name}: no topologySpreadConstraints`)
  for (const t of pod.topologySpreadConstraints ?? [])
    if (Object.entries(t.labelSelector?.matchLabels ?? {}).some(([k, v]) => labels[k] !== v))
      problems.push(`Deployment ${name}: a topology spread selector does not match its pods`)
  checkPodSecurity(pod, `Deployment ${name}`, problems)
  if (!(pod.terminationGracePeriodSeconds > 5))
    problems.push(`Deployment ${name}: terminationGracePeriodSeconds must leave time after the preStop sleep`)

  const mainC = (pod.containers ?? []).find((c) => c.name === name)
  if (!mainC) problems.push(`Deployment ${name}: no container named ${name}`)
  // Migrations are the service's Job (k8s-migrations.mjs), not an initContainer.
  if ((pod.initContainers ?? []).some((c) => (c.command ?? []).join(' ').includes('dist/db/migrate.js')))
    problems.push(`Deployment ${name}: migrations run in the ${name}-migrate Job, not in an initContainer`)
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])])
    checkContainer(c, `Deployment ${name} container ${c.name}`, pod, ctx, `clinic/${name}`, problems)
  if (mainC) {
    const envNames = new Set([
      ...(mainC.env ?? []).map((e) => e.name),
      ...(mainC.envFrom ?? []).flatMap((ef) => [...(ctx.configMaps.get(ef.configMapRef?.name) ?? [])]),
    ])
    for (const k of ['DATABASE_URL', 'AMQP_URL', 'INTERNAL_AUTH_SECRET', 'EVENT_SIGNING_SECRET', 'HOST'])
      if (!envNames.has(k)) problems.push(`Deployment ${name}: ${k} not provided`)
    if (!envNames.has(envName(name, 'PORT')))
      problems.push(`Deployment ${name}: ${envName(name, 'PORT')} not provided`)
    for (const k of requiredVars(name))
      if (!envNames.has(k))
        problems.push(`Deployment ${name}: ${k} (required by services/${name}/src/config.ts) not provided`)
  }
  if (mainC) {
    const where = `Deployment ${name}`
    const named = Object.fromEntries((mainC.ports ?? []).map((p) => [p.name, p.containerPort]))
    if (named.http !== port) problems.push(`${where}: container port "http" must be ${port}`)
    const probe = (p) => `${get(mainC, `${p}.httpGet.path`)}@${get(mainC, `${p}.httpGet.port`)}`
    if (probe('livenessProbe') !== '/health/live@http')
      problems.push(`${where}: livenessProbe must GET /health/live on port http`)
    if (probe('readinessProbe') !== '/health/ready@http')
      problems.push(`${where}: readinessProbe must GET /health/ready on port http`)
    const pre = mainC.lifecycle?.preStop
    if (!pre?.sleep && !(pre?.exec?.command ?? []).includes('sleep'))
      problems.push(`${where}: no preStop sleep (draining)`)
    if (name === 'gateway' && !(mainC.env ?? []).some((e) => e.name === 'REDIS_URL'))
      problems.push('Deployment gateway: REDIS_URL (shared rate limiter) not provided')
  }
}

/** Hardening, resources, image, volumes and Secret keys of a container (of a Deployment or a Job). */
export function checkContainer(c, where, pod, ctx, image, problems) {
  if (!new RegExp(`(^|/)${image}:\\d{6}\\.\\d{2}$`).test(c.image ?? ''))
    problems.push(`${where}: image ${c.image}, expected .../${image}:<release> (kustomization images)`)
  const sc = c.securityContext ?? {}
  if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: readOnlyRootFilesystem must be true`)
  if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation must be false`)
  if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: must drop ALL capabilities`)
  for (const k of ['requests.cpu', 'requests.memory', 'limits.memory'])
    if (!get(c.resources, k)) problems.push(`${where}: resources.${k} not set`)
  const volumes = new Set((pod.volumes ?? []).map((v) => v.name))
  for (const m of c.volumeMounts ?? [])
    if (!volumes.has(m.name)) problems.push(`${where}: mounts unknown volume ${m.name}`)
  for (const ef of c.envFrom ?? []) {
    if (ef.configMapRef && !ctx.configMaps.has(ef.configMapRef.name))
      problems.push(`${where}: ConfigMap ${ef.configMapRef.name} is not defined`)
    if (ef.secretRef)
      problems.push(`${where}: envFrom a whole Secret; reference the keys it needs one by one`)
  }
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef
    if (ref && !ctx.secrets.get(ref.name)?.has(ref.key))
      problems.push(`${where}: secret ${ref.name}/${ref.key} is not in secret.example.yaml`)
  }
}

/** The pod-level hardening shared by Deployments and Jobs. */
export function checkPodSecurity(pod, where, problems) {
  const psc = pod.securityContext ?? {}
  if (psc.runAsNonRoot !== true || !(psc.runAsUser > 0))
    problems.push(`${where}: pod securityContext must set runAsNonRoot and a non-zero runAsUser`)
  if (psc.seccompProfile?.type !== 'RuntimeDefault')
    problems.push(`${where}: pod securityContext must use the RuntimeDefault seccomp profile`)
  if (pod.automountServiceAccountToken !== false)
    problems.push(`${where}: automountServiceAccountToken must be false`)
}

/** Prints the variables the services declare that neither the ConfigMap nor the Secret supplies. */
export function noteUnsupplied(ctx) {
  // Every variable a service's config.ts declares should get its value from the ConfigMap or the Secret
  // (a note, not a failure: declared variables all have defaults or are checked above).
  const supplied = new Set([
    ...[...ctx.configMaps.values()].flatMap((k) => [...k]),
    ...[...ctx.secrets.values()].flatMap((k) => [...k]),
    ...ctx.envNames,
  ])
  const declared = [
    ...SERVICES.map((s) => `services/${s}/src/config.ts`),
    'packages/platform/src/service.ts', // the variables every service shares
  ].flatMap((f) =>
    existsSync(path.join(root, f))
      ? [...read(f).matchAll(/^\s+([A-Z][A-Z0-9_]+):\s*(?:v\.|upstream\()/gm)].map((m) => m[1])
      : [],
  )
  const unsupplied = [...new Set(declared)].filter((k) => !supplied.has(k))
  if (unsupplied.length)
    console.log(
      `note deploy/k8s: not in the ConfigMap or Secret (service default applies): ${unsupplied.join(', ')}`,
    )
}

/** Only the Ingress controller reaches the gateway, only clinic pods reach the services. */
export function checkNetworkPolicies(all, podLabels, problemsOf) {
  // A default-deny ingress policy, and the gateway's own policy not open to clinic pods at large.
  const policies = all.filter((o) => o.kind === 'NetworkPolicy')
  const kustomizeProblems = problemsOf(policies[0])
  if (
    !policies.some(
      (p) => Object.keys(p.spec?.podSelector ?? {}).length === 0 && !(p.spec?.ingress ?? []).length,
    )
  )
    kustomizeProblems.push(
      'NetworkPolicy: no default-deny ingress policy (podSelector {} and no ingress rule)',
    )
  for (const s of SERVICES.filter((x) => x !== 'gateway'))
    if (!policies.some((p) => (p.spec?.ingress ?? []).length && policySelects(p, podLabels(s))))
      kustomizeProblems.push(`NetworkPolicy: nothing lets the gateway reach ${s}`)
  checkEgress(policies, podLabels, problemsOf)
}

/**
 * Egress policies (webhooks: the internet on 443): a pod whose egress is restricted still reaches
 * DNS, PostgreSQL and RabbitMQ; an ipBlock open to every address leaves out the non-public ranges
 * (private, loopback, link-local: the cloud metadata address), so a receiver URL cannot reach them.
 */
function checkEgress(policies, podLabels, problemsOf) {
  const egress = policies.filter((p) => (p.spec?.policyTypes ?? []).includes('Egress'))
  for (const p of egress) {
    const problems = problemsOf(p)
    for (const rule of p.spec?.egress ?? [])
      for (const to of rule.to ?? []) {
        const block = to.ipBlock
        if (!block) continue
        const missing = (NON_PUBLIC[block.cidr] ?? []).filter((c) => !(block.except ?? []).includes(c))
        if (missing.length)
          problems.push(
            `NetworkPolicy ${p.metadata?.name}: ipBlock ${block.cidr} must except ${missing.join(', ')}`,
          )
        if (!NON_PUBLIC[block.cidr] && !rule.ports?.length)
          problems.push(`NetworkPolicy ${p.metadata?.name}: ipBlock ${block.cidr} on every port`)
      }
  }
  for (const s of SERVICES) {
    const mine = egress.filter((p) => policySelects(p, podLabels(s)))
    if (!mine.length) continue
    // A rule without `to` reaches every address; without `ports`, every port.
    const open = (protocol, port) =>
      mine.some((p) =>
        (p.spec?.egress ?? []).some(
          (r) =>
            !(r.to ?? []).length &&
            (!(r.ports ?? []).length ||
              r.ports.some((x) => x.port === port && (x.protocol ?? 'TCP') === protocol)),
        ),
      )
    for (const [protocol, ports] of Object.entries(BASE_EGRESS_PORTS))
      for (const port of ports)
        if (!open(protocol, port))
          problemsOf(mine[0]).push(
            `NetworkPolicy ${mine[0].metadata?.name}: ${s} pods cannot reach ${protocol} ${port} (DNS, PostgreSQL, RabbitMQ)`,
          )
  }
}

/** Does a NetworkPolicy's podSelector (matchLabels and matchExpressions In/NotIn) pick these labels? */
function policySelects(policy, labels) {
  const sel = policy.spec?.podSelector ?? {}
  const byLabels = Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v)
  const byExpressions = (sel.matchExpressions ?? []).every((e) =>
    e.operator === 'In'
      ? e.values.includes(labels[e.key])
      : e.operator === 'NotIn'
        ? !e.values.includes(labels[e.key])
        : false,
  )
  return byLabels && byExpressions
}
