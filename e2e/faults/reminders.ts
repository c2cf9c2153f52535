import { readFileSync } from 'node:fs'
import path from 'node:path'
import { namesOf, stackDbRole } from '@clinic/platform/naming'
import { moveClock } from '../src/stack'
import { makeTenant, post, waitFor, type Answer, type FaultStack, type Tenant } from './harness'

/**
 * What the reminder fault scenario needs: a company with a reminder policy and `n` appointments at
 * the same time (a practitioner and a patient of their own each, so none clashes, and a phone of
 * its own each, so no per-address limit applies), comms' clock moved past their due time, a kill
 * timed by the reminders' own rows, and the checker: every reminder sent, each with one message,
 * each message handed to the file provider (OUTBOX_DIR/sms.jsonl) at most once.
 */

const HOUR = 3_600_000
/** Requests at once while booking (each a patient, then its appointment). */
const BATCH = 20
const RETRIABLE = new Set([429, 502, 503, 504])

/** A POST that must succeed: retried with its Idempotency-Key on no answer or 429/502/503/504. */
async function postOk(fs: FaultStack, path: string, t: Tenant, key: string, body: unknown) {
  const deadline = Date.now() + 20_000
  for (;;) {
    let a: Answer | null = null
    try {
      a = await post(fs.info.api, path, t.token, key, body)
    } catch {
      a = null
    }
    if (a && a.status < 300) return a
    if ((a && !RETRIABLE.has(a.status)) || Date.now() > deadline)
      throw new Error(`POST ${path}: ${a?.status ?? 'no answer'} ${JSON.stringify(a?.body ?? '')}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

export interface ReminderBooking {
  t: Tenant
  appointmentIds: string[]
  /** When every appointment starts (ms); each reminder is due an hour before. */
  startsAt: number
}

/**
 * A company whose policy reminds an hour before (`PT1H`), and `n` appointments starting at the same
 * minute about 2.5 days ahead: `n` reminders due at the same instant.
 */
export async function bookReminders(fs: FaultStack, n: number): Promise<ReminderBooking> {
  const t = await makeTenant(['ALM1'], fs.info)
  const res = await fetch(`${fs.info.api}/comms/reminder-policy`, {
    method: 'PUT',
    headers: { 'x-service-token': t.token, 'content-type': 'application/json' },
    body: JSON.stringify({ enabled: true, offsets: ['PT1H'] }),
    signal: AbortSignal.timeout(10_000),
  })
  if (res.status !== 200) throw new Error(`PUT /comms/reminder-policy: ${res.status} ${await res.text()}`)
  const startsAt = Math.ceil((Date.now() + 60 * HOUR) / 60_000) * 60_000
  const slot = {
    starts_at: new Date(startsAt).toISOString(),
    ends_at: new Date(startsAt + 15 * 60_000).toISOString(),
  }
  // +34 6xx xxx xxx: the company's last three digits, then the patient's five.
  const phone = (k: number) =>
    `+346${String(t.companyId % 1000).padStart(3, '0')}${String(k).padStart(5, '0')}`
  const appointmentIds: string[] = []
  for (let from = 0; from < n; from += BATCH) {
    const ids = await Promise.all(
      Array.from({ length: Math.min(BATCH, n - from) }, async (_, j) => {
        const k = from + j
        const patient = await postOk(fs, '/patients', t, `reminder-patient-${k}`, {
          first_name: 'Fault',
          last_name: `Reminder ${k}`,
          birth_date: '1980-02-03',
          codalmacen: 'ALM1',
          language: 'en',
          phone: phone(k),
          preferred_channel: 'sms',
        })
        const booked = await postOk(fs, '/appointments', t, `reminder-appointment-${k}`, {
          patient_id: patient.body.id,
          codalmacen: 'ALM1',
          practitioner: `dra-reminder-${k}`,
          ...slot,
          reason: `reminder:${k}`,
        })
        return booked.body.id as string
      }),
    )
    appointmentIds.push(...ids)
  }
  return { t, appointmentIds, startsAt }
}

export interface ReminderCounts {
  total: number
  scheduled: number
  sent: number
  /** Claimed by a worker and not settled yet (scheduled, attempts > 0). */
  leased: number
  /** Claimed more than once (a lease ran out: its worker died, or its send failed). */
  claimedAgain: number
}

export async function reminderCounts(fs: FaultStack, companyId: number): Promise<ReminderCounts> {
  const [c] = await fs.sql<ReminderCounts>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status = 'scheduled')::int AS scheduled,
            count(*) FILTER (WHERE status = 'sent')::int AS sent,
            count(*) FILTER (WHERE status = 'scheduled' AND attempts > 0)::int AS "leased",
            count(*) FILTER (WHERE attempts > 1)::int AS "claimedAgain"
       FROM comms.reminders WHERE idempresa = $1`,
    [companyId],
  )
  return c!
}

/** Until the company has `n` reminders, every one `scheduled` (the appointments' events consumed). */
export async function scheduled(fs: FaultStack, companyId: number, n: number) {
  let last: ReminderCounts | null = null
  await waitFor(
    async () => {
      last = await reminderCounts(fs, companyId)
      return last.total === n && last.scheduled === n
    },
    { timeoutMs: 30_000, intervalMs: 250, what: `${n} reminders scheduled` },
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; last ${JSON.stringify(last)}`)
  })
}

/** comms' clock half a minute past the reminders' due time (still before the appointments start). */
export function clockPastDue(fs: FaultStack, startsAt: number) {
  moveClock(fs.info, startsAt - HOUR + 30_000 - Date.now())
}

/**
 * SIGKILLs comms while it sends the company's reminders: at the first look (its rows, every 20 ms)
 * where at least `fraction` of them are `sent` and at least `inFlight` others are claimed and not
 * settled (the worker settles them in group commits, so right after one few may be in its hands).
 * Then waits until PostgreSQL has dropped comms' connections, so the counts it returns are what
 * the dead process committed.
 */
export async function killWhileSending(
  fs: FaultStack,
  companyId: number,
  n: number,
  o: { fraction?: number; inFlight?: number } = {},
) {
  const fraction = o.fraction ?? 0.1
  const inFlight = o.inFlight ?? 8
  let exit: ReturnType<FaultStack['kill']> | undefined
  let last: ReminderCounts | null = null
  await waitFor(
    async () => {
      last = await reminderCounts(fs, companyId)
      if (last.sent >= n) throw new Error('every reminder was sent before the kill')
      if (last.sent < Math.ceil(n * fraction) || last.leased < inFlight) return false
      exit = fs.kill('comms', 'SIGKILL')
      return true
    },
    {
      timeoutMs: 30_000,
      intervalMs: 20,
      what: `${fraction * 100}% of the reminders sent and ${inFlight} in flight`,
    },
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; last ${JSON.stringify(last)}`)
  })
  const killedAt = Date.now()
  const { signal } = await exit!
  const role = stackDbRole(namesOf('comms').loginRole, fs.info.env.DB_ROLE_PREFIX)
  await waitFor(
    async () =>
      (
        await fs.sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND usename = $1`,
          [role],
        )
      )[0]!.n === 0,
    { timeoutMs: 10_000, intervalMs: 50, what: "comms' connections gone" },
  )
  return { signal, killedAt, atKill: await reminderCounts(fs, companyId) }
}

export interface ReminderVerdict {
  fault: string
  reminders: number
  /** Sent (committed) by the process that was killed. */
  sent_before_kill: number
  /** Claimed by it and not settled: they wait out its lease. */
  leased_at_kill: number
  /** Sent by the process started after the kill. */
  sent_after: number
  claimed_again: number
  /** Reminders not `sent`, or whose message is missing (**must be 0**). */
  lost: number
  /** Appointments with more than one reminder message (**must be 0**). */
  duplicated: number
  messages: number
  /** Messages handed to the file provider more than once (**must be 0**). */
  handed_twice: number
  /** Messages `sent` with no line in sms.jsonl (**must be 0**). */
  sent_unwritten: number
  /** Messages the kill caught mid-send: left `sending` for the stale sweep, never resent. */
  left_sending: number
  /** Messages still `queued`: never handed over (**must be 0**). */
  left_queued: number
  down_s: number
  settle_s: number
}

/**
 * The checker: waits (up to the lease plus 30 s) until every reminder is `sent` and no message of
 * them is still `queued`, then counts messages per appointment and lines of sms.jsonl per message.
 */
export async function checkReminders(
  fs: FaultStack,
  b: ReminderBooking,
  kill: Awaited<ReturnType<typeof killWhileSending>>,
  backAt: number,
  fault: string,
): Promise<ReminderVerdict> {
  const companyId = b.t.companyId
  const n = b.appointmentIds.length
  const leaseMs = Number(fs.info.env.REMINDER_LEASE_MS ?? 60_000)
  const queued = async () =>
    (
      await fs.sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM comms.messages
          WHERE idempresa = $1 AND template = 'appointment_reminder' AND status = 'queued'`,
        [companyId],
      )
    )[0]!.n
  await waitFor(async () => (await reminderCounts(fs, companyId)).sent === n && (await queued()) === 0, {
    timeoutMs: leaseMs + 30_000,
    intervalMs: 250,
    what: 'every reminder sent, every message handed over',
  }).catch(() => undefined) // counted below
  const settleS = Math.round((Date.now() - backAt) / 100) / 10
  const after = await reminderCounts(fs, companyId)
  const duplicates = await fs.sql(
    `SELECT appointment_id, count(*) FROM comms.messages
      WHERE idempresa = $1 AND template = 'appointment_reminder' GROUP BY 1 HAVING count(*) > 1`,
    [companyId],
  )
  const messages = await fs.sql<{ id: string; status: string }>(
    `SELECT id::text AS id, status FROM comms.messages
      WHERE idempresa = $1 AND template = 'appointment_reminder'`,
    [companyId],
  )
  const lost = (
    await fs.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM comms.reminders r
         LEFT JOIN comms.messages m ON m.idempresa = r.idempresa AND m.id = r.message_id
        WHERE r.idempresa = $1 AND (r.status <> 'sent' OR m.id IS NULL)`,
      [companyId],
    )
  )[0]!.n
  // Handed to the file provider: one line of sms.jsonl per send (the file holds the whole stack's).
  const lines = new Map<string, number>()
  let file = ''
  try {
    file = readFileSync(path.join(fs.info.env.OUTBOX_DIR!, 'sms.jsonl'), 'utf8')
  } catch {
    /* nothing sent yet */
  }
  for (const l of file.split('\n'))
    if (l) {
      const id = (JSON.parse(l) as { id: string }).id
      lines.set(id, (lines.get(id) ?? 0) + 1)
    }
  const status = (s: string) => messages.filter((m) => m.status === s)
  return {
    fault,
    reminders: n,
    sent_before_kill: kill.atKill.sent,
    leased_at_kill: kill.atKill.leased,
    sent_after: after.sent - kill.atKill.sent,
    claimed_again: after.claimedAgain,
    lost,
    duplicated: duplicates.length,
    messages: messages.length,
    handed_twice: messages.filter((m) => (lines.get(m.id) ?? 0) > 1).length,
    sent_unwritten: status('sent').filter((m) => !lines.has(m.id)).length,
    left_sending: status('sending').length,
    left_queued: status('queued').length,
    down_s: Math.round((backAt - kill.killedAt) / 100) / 10,
    settle_s: settleS,
  }
}
