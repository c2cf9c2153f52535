// The database roles in Kubernetes: each service's migrations run in a Job of its own (<name>-migrate),
// the only object holding the owner's credentials (the migration Secret); each Deployment logs in
// with its own DATABASE_URL key, which its Job gets too (it makes that role), and never sees the
// owner's Secret; its broker user is its own too; only audit reads the chain key, only webhooks its
// sealing key, only comms its link key, and no Deployment an event signing key (the broker vouches
// for an event's origin). Plus the Secret examples: placeholders, and distinct login roles.
import { SERVICES } from './lib.mjs'
import { checkContainer, checkPodSecurity } from './k8s-rules.mjs'

export const MIGRATION_SECRET = 'clinic-migration-secrets'
export const jobName = (service) => `${service}-migrate`

const OWN = ['DATABASE_URL', 'AMQP_URL']
/** Secret keys only these Deployments may read (none: the event keys that let one service sign as another). */
const ONLY = {
  AUDIT_CHAIN_KEY: ['audit'],
  WEBHOOKS_SECRET_KEY: ['webhooks'],
  COMMS_LINK_SECRET: ['comms'],
  DOCUMENTS_LINK_SECRET: ['documents'],
  EVENT_SIGNING_SECRET: [],
  EVENT_VERIFY_KEYS: [],
}
const refOf = (c, name) => (c?.env ?? []).find((e) => e.name === name)?.valueFrom?.secretKeyRef
const sameRef = (a, b) => a && b && a.name === b.name && a.key === b.key

/** Rules of every migration Job and of the Deployment it belongs to; problemsOf(object) for the report. */
export function checkMigrations(all, ctx, problemsOf) {
  const jobs = new Map(all.filter((o) => o.kind === 'Job').map((o) => [o.metadata?.name, o]))
  const keys = new Map()
  for (const d of all.filter((o) => o.kind === 'Deployment')) {
    const name = d.metadata?.name
    const problems = problemsOf(d)
    const pod = d.spec?.template?.spec ?? {}
    const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])]
    for (const c of containers) {
      if ((c.env ?? []).some((e) => e.name === 'MIGRATION_DATABASE_URL'))
        problems.push(`Deployment ${name} container ${c.name}: MIGRATION_DATABASE_URL is the Job's only`)
      const refs = [
        ...(c.env ?? []).map((e) => e.valueFrom?.secretKeyRef?.name),
        ...(c.envFrom ?? []).map((ef) => ef.secretRef?.name),
      ]
      if (refs.includes(MIGRATION_SECRET))
        problems.push(`Deployment ${name} container ${c.name}: references ${MIGRATION_SECRET} (owner's)`)
    }
    for (const v of pod.volumes ?? [])
      if (v.secret?.secretName === MIGRATION_SECRET)
        problems.push(`Deployment ${name}: mounts ${MIGRATION_SECRET} (the owner's credentials)`)
    const main = (pod.containers ?? []).find((c) => c.name === name)
    // Its own database login and broker user: a Secret key no other Deployment reads.
    for (const v of OWN) {
      const ref = refOf(main, v)
      if (!ref) problems.push(`Deployment ${name}: ${v} must come from a Secret key of its own`)
      else if (keys.has(`${ref.name}/${ref.key}`))
        problems.push(
          `Deployment ${name}: ${v} ${ref.name}/${ref.key} is also ${keys.get(`${ref.name}/${ref.key}`)}'s`,
        )
      else keys.set(`${ref.name}/${ref.key}`, name)
    }
    // The chain key is audit's alone, the sealing key webhooks', the link key comms'; event keys nobody's.
    for (const [v, only] of Object.entries(ONLY))
      if (
        !only.includes(name) &&
        containers.some((c) => refOf(c, v) || (c.env ?? []).some((e) => e.name === v))
      )
        problems.push(
          `Deployment ${name}: ${v} is ${only.length ? `${only.join(' and ')}'s only` : "no one's"}`,
        )
    const own = refOf(main, 'DATABASE_URL')

    const job = jobs.get(jobName(name))
    if (!job) {
      problems.push(`Deployment ${name}: no migration Job ${jobName(name)}`)
      continue
    }
    const jc = job.spec?.template?.spec?.containers ?? []
    const migrate = jc.find((c) => (c.command ?? []).join(' ').includes('dist/db/migrate.js'))
    if (!migrate) problems.push(`Job ${jobName(name)}: no container runs dist/db/migrate.js`)
    else if (main && migrate.image !== main.image)
      problems.push(`Job ${jobName(name)}: image ${migrate.image} is not the Deployment's ${main.image}`)
    if (migrate && own && !sameRef(refOf(migrate, 'DATABASE_URL'), own))
      problems.push(`Job ${jobName(name)}: DATABASE_URL is not the Deployment's (${own.name}/${own.key})`)
  }
  for (const job of jobs.values()) checkJob(job, ctx, problemsOf(job), all)
}

function checkJob(job, ctx, problems, all) {
  const name = job.metadata?.name
  const service = SERVICES.find((s) => jobName(s) === name)
  const where = `Job ${name}`
  if (!service) problems.push(`${where}: not <service>-migrate of a service`)
  const spec = job.spec ?? {}
  const pod = spec.template?.spec ?? {}
  if (!(spec.backoffLimit >= 0 && spec.backoffLimit <= 6))
    problems.push(`${where}: backoffLimit 0..6 not set`)
  if (!(spec.ttlSecondsAfterFinished > 0)) problems.push(`${where}: ttlSecondsAfterFinished not set`)
  if (!['Never', 'OnFailure'].includes(pod.restartPolicy))
    problems.push(`${where}: restartPolicy must be Never or OnFailure`)
  if (job.metadata?.labels?.['app.kubernetes.io/component'] !== 'migrate')
    problems.push(`${where}: label app.kubernetes.io/component=migrate (the release selects by it)`)
  checkPodSecurity(pod, where, problems)
  const labels = spec.template?.metadata?.labels ?? {}
  for (const d of all.filter((o) => o.kind === 'Deployment')) {
    const sel = d.spec?.selector?.matchLabels ?? {}
    if (Object.keys(sel).length && Object.entries(sel).every(([k, v]) => labels[k] === v))
      problems.push(`${where}: its pods match Deployment ${d.metadata?.name}'s selector (Service, PDB, HPA)`)
  }
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    checkContainer(
      c,
      `${where} container ${c.name}`,
      pod,
      ctx,
      c.name === 'migrate' && `clinic/${service}`,
      problems,
    )
    const mig = refOf(c, 'MIGRATION_DATABASE_URL')
    if (mig?.name !== MIGRATION_SECRET)
      problems.push(`${where} container ${c.name}: MIGRATION_DATABASE_URL must come from ${MIGRATION_SECRET}`)
    if (!refOf(c, 'DATABASE_URL'))
      problems.push(`${where} container ${c.name}: DATABASE_URL (the role it makes) not from a Secret`)
  }
}

/** secret.example.yaml: placeholders only; the owner's URL apart; one login role per service. */
export function checkSecretExamples(secrets, problems) {
  const byName = new Map(secrets.map((s) => [s.metadata?.name, s]))
  const user = (url) => {
    try {
      return new URL(url).username
    } catch {
      return undefined
    }
  }
  for (const s of secrets) {
    for (const [k, v] of Object.entries(s.stringData ?? {}))
      if (!/CHANGE_ME|X{8,}/.test(String(v)))
        problems.push(`Secret ${s.metadata?.name}: ${k} is not a placeholder (use CHANGE_ME)`)
    if (s.data) problems.push(`Secret ${s.metadata?.name}: use stringData placeholders, not data`)
  }
  const owner = user(byName.get(MIGRATION_SECRET)?.stringData?.MIGRATION_DATABASE_URL)
  if (!owner) problems.push(`no Secret ${MIGRATION_SECRET} with MIGRATION_DATABASE_URL (the schema owner)`)
  const app = byName.get('clinic-secrets')?.stringData ?? {}
  if ('MIGRATION_DATABASE_URL' in app)
    problems.push('clinic-secrets: the owner URL belongs in its own Secret')
  const seen = new Map()
  for (const [k, v] of Object.entries(app).filter(([k]) => /DATABASE_URL$/.test(k))) {
    const u = user(v)
    if (!u || u === owner) problems.push(`clinic-secrets: ${k} must log in as a role of its own, not ${u}`)
    else if (seen.has(u)) problems.push(`clinic-secrets: ${k} and ${seen.get(u)} share the role ${u}`)
    seen.set(u, k)
  }
}
