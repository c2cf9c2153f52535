// Rules for the Kubernetes objects: Deployments (probes, resources, securityContext, metrics port,
// ...), containers. API types: k8s-types.mjs; migration Jobs and Secrets: k8s-migrations.mjs;
// NetworkPolicies: k8s-network.mjs; assertion keys: assertion-keys.mjs.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { metricsPort } from '../../scripts/generate/networkpolicy.mjs'
import { pinProblem } from './images.mjs'
import { APPS, PORTS, SERVICES, envName, get, read, requiredVars, root } from './lib.mjs'

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
    checkContainer(
      c,
      `Deployment ${name} container ${c.name}`,
      pod,
      ctx,
      c === mainC && `clinic/${name}`,
      problems,
    )
  if (mainC) {
    const envNames = new Set([
      ...(mainC.env ?? []).map((e) => e.name),
      ...(mainC.envFrom ?? []).flatMap((ef) => [...(ctx.configMaps.get(ef.configMapRef?.name) ?? [])]),
    ])
    for (const k of ['DATABASE_URL', 'AMQP_URL', 'HOST'])
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
    // /metrics on a port of its own, which Prometheus scrapes (and the monitoring namespace reaches).
    const metrics = metricsPort(APPS.find((a) => a.name === name) ?? { port: 0 })
    if (named.metrics !== metrics) problems.push(`${where}: container port "metrics" must be ${metrics}`)
    const metricsEnv = (mainC.env ?? []).find((e) => e.name === 'METRICS_PORT')?.value
    if (metricsEnv !== undefined && String(metricsEnv) !== String(metrics))
      problems.push(`${where}: METRICS_PORT ${metricsEnv} is not its metrics port ${metrics}`)
    const annotations = spec.template?.metadata?.annotations ?? {}
    if (
      annotations['prometheus.io/scrape'] === 'true' &&
      String(annotations['prometheus.io/port']) !== String(metrics)
    )
      problems.push(`${where}: prometheus.io/port must be the metrics port ${metrics}, not the API port`)
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
  // `image`: the service's own container runs the image built here (kustomization images: the
  // release); any other container (null: a sidecar) a third-party image pinned by digest.
  if (image && !new RegExp(`(^|/)${image}:\\d{6}\\.\\d{2}(@sha256:[0-9a-f]{64})?$`).test(c.image ?? ''))
    problems.push(`${where}: image ${c.image}, expected .../${image}:<release> (kustomization images)`)
  else if (!image && pinProblem(c.image)) problems.push(`${where}: ${pinProblem(c.image)}`)
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
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])])
    for (const problem of secretsOnCommandLine(c)) problems.push(`${where} container ${c.name}: ${problem}`)
}

/**
 * A Secret's value on a container's command line: `$(VAR)` in command or args is expanded by the
 * kubelet into argv, which process listings and the container runtime show; `--requirepass` anything.
 * A secret reaches a process through its environment (or a file), and a shell reads it there.
 */
export function secretsOnCommandLine(container) {
  const fromSecret = new Set(
    (container.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name),
  )
  const argv = [...(container.command ?? []), ...(container.args ?? [])].map(String)
  const problems = []
  for (const [, name] of argv.join('\n').matchAll(/(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
    if (fromSecret.has(name))
      problems.push(`$(${name}) puts a Secret's value on the command line; read it from the environment`)
  if (argv.includes('--requirepass'))
    problems.push('--requirepass puts the password on the command line; a requirepass config line instead')
  return problems
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
