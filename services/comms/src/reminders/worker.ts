import { GroupCommit, JobRunner, traceOf, type Span } from '@clinic/platform'
import { AppError, type Ctx } from '@clinic/platform/core'
import { companyTransaction } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Clock } from '../clock'
import type { AppointmentDirectory, AppointmentInfo } from '../domain/directories'
import type { PatientDirectory } from '../domain/directories'
import { resolveRecipient } from '../domain/rules'
import type { ReminderStatus } from '../schemas/reminder'
import { REMINDED_STATUSES } from './plan'
import type { ClaimedReminder, ReminderStore } from './reminder-store'
import { reminderText, type ReminderText } from './reminder-text'
import { systemCtx } from '../domain/system-ctx'
import type { QueueSystemMessage } from '../system-queue'

/** What the worker hands to the send path: the message of one reminder, addressed and rendered. */
export interface ReminderMessage {
  patient: NonNullable<Awaited<ReturnType<PatientDirectory['find']>>>
  recipient: ReturnType<typeof resolveRecipient>
  appointmentId: string
  text: ReminderText
}

/** Queues a reminder's message in the reminder's transaction (QueueSystemMessage). */
export type QueueReminderMessage = QueueSystemMessage<ReminderMessage>

export interface ReminderWorkerOptions {
  knex: Knex
  log: Logger
  store: ReminderStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  queue: QueueReminderMessage
  clock: Clock
  /** Reminders in flight at once in this process. */
  concurrency: number
  /** PUBLIC_BASE_URL and COMMS_LINK_SECRET, for the confirm / cancel link. */
  links: { baseUrl: string; secret: string }
  pollMs?: number
  /** REMINDER_LEASE_MS; LEASE_MS unless given. */
  leaseMs?: number
}

/** Who sends reminders, on the audit trail (the queued events' actor). */
export const REMINDER_ACTOR = 'comms-reminders'

/** Longer than a reminder's lookups and its transaction: a lease that runs out means the worker died. */
export const LEASE_MS = 60_000

type Outcome = { status: ReminderStatus; reason: string; retryAt?: Date }

/**
 * Sends due reminders: claims them from PostgreSQL (claim_reminders: SKIP LOCKED, a lease), checks
 * the appointment is still as reminded (else cancelled) and renders the message for the guardian
 * or the patient, then queues it and settles the reminder in one transaction, only while the claim
 * is still its own. So a reminder is queued once: a worker that dies before that commit left
 * nothing behind, and its lease running out hands the reminder to the next claim.
 */
interface Settling {
  r: ClaimedReminder
  ctx: Ctx
  prepared: ReminderMessage | Outcome
}

export class ReminderWorker extends JobRunner<ClaimedReminder> {
  private readonly commits = new GroupCommit<Settling, ReminderStatus | null>((b) => this.settleBatch(b), 64)

  constructor(private readonly o: ReminderWorkerOptions) {
    super({
      name: 'reminders',
      concurrency: o.concurrency,
      // A claim is a scan of the due index: under load, claim a quarter of the slots at a time.
      minClaim: Math.ceil(o.concurrency / 4),
      pollMs: o.pollMs ?? 1000,
      log: o.log,
    })
  }

  protected claimJobs(limit: number): Promise<ClaimedReminder[]> {
    return this.o.store.claim(this.o.clock(), limit, this.o.leaseMs ?? LEASE_MS)
  }

  /** Sending a reminder is a span of the trace that scheduled it. */
  protected override causeOf(r: ClaimedReminder) {
    return r.traceparent ? { traceparent: r.traceparent } : undefined
  }

  protected runJob(r: ClaimedReminder, span: Span): Promise<void> {
    return this.send(r, span)
  }

  private async send(r: ClaimedReminder, span: Span): Promise<void> {
    const ctx = systemCtx(r.companyId, REMINDER_ACTOR, {
      log: this.o.log.child({ trace_id: span.spanContext().traceId }),
      ...traceOf(span),
    })
    try {
      const prepared = await this.prepare(ctx, r)
      const status = await this.commits.submit({ r, ctx, prepared })
      ctx.log.info(
        { reminder_id: r.id, appointment_id: r.appointmentId, status: status ?? 'lease lost' },
        'reminder settled',
      )
    } catch (err) {
      // Lookups down, the database away: the lease runs out and the reminder is claimed again.
      ctx.log.warn({ err, reminder_id: r.id }, 'reminder not sent; will retry')
    }
  }

  /**
   * Settles prepared reminders in group commits, one transaction per company: under load one
   * commit (and one pass over the company's daily counter row) covers many reminders. Each is
   * written only while its claim is still its own (else null: another worker has it).
   */
  private async settleBatch(batch: Settling[]): Promise<Array<ReminderStatus | null>> {
    const byCompany = new Map<number, Settling[]>()
    for (const s of batch) byCompany.set(s.r.companyId, [...(byCompany.get(s.r.companyId) ?? []), s])
    const settled = new Map<Settling, ReminderStatus | null>()
    await Promise.all(
      [...byCompany].map(([companyId, items]) =>
        companyTransaction(this.o.knex, companyId, async (trx) => {
          const ours = await this.o.store.lockClaimed(
            trx,
            items.map((s) => s.r),
          )
          for (const s of items) {
            if (!ours.has(s.r.id)) {
              settled.set(s, null)
              continue
            }
            const p = s.prepared
            const outcome = 'status' in p ? p : await this.queue(trx, s.ctx, s.r, p)
            await this.o.store.settle(trx, s.r, outcome)
            settled.set(s, outcome.status)
          }
        }),
      ),
    )
    return batch.map((s) => settled.get(s) ?? null)
  }

  /** The rendered message, or why there is none (read outside the transaction: HTTP lookups). */
  private async prepare(ctx: Ctx, r: ClaimedReminder): Promise<ReminderMessage | Outcome> {
    const appointment = await this.o.appointments.find(ctx, r.appointmentId)
    const why = stale(appointment, r, this.o.clock())
    if (why) return why
    const patient = await this.o.patients.find(ctx, r.patientId)
    if (!patient) return { status: 'skipped', reason: 'the patient no longer exists' }
    let recipient: ReminderMessage['recipient']
    try {
      recipient = resolveRecipient(patient, {})
    } catch (err) {
      if (err instanceof AppError) return { status: 'skipped', reason: err.code }
      throw err
    }
    const link = r.confirmLink ? this.o.links : null
    const text = await reminderText(appointment!, patient.language, recipient.name, r, link)
    return { patient, recipient, appointmentId: r.appointmentId, text }
  }

  private async queue(
    trx: Knex.Transaction,
    ctx: Ctx,
    r: ClaimedReminder,
    m: ReminderMessage,
  ): Promise<Outcome & { messageId?: string }> {
    try {
      // A savepoint: a refusal takes back whatever the send path had counted.
      const sent = await trx.transaction((sp) => this.o.queue(sp, ctx, m))
      return sent.suppressed
        ? { status: 'suppressed', reason: 'the address opted out', messageId: sent.id }
        : { status: 'sent', reason: '', messageId: sent.id }
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      // A limit that frees up (the hourly one, tomorrow's quota) says when: try again then.
      const after = Number(err.headers?.['retry-after'] ?? err.headers?.['Retry-After'])
      const retryAt = after > 0 ? new Date(this.o.clock().getTime() + after * 1000) : null
      if (retryAt && retryAt < r.startsAt) return { status: 'scheduled', reason: err.code, retryAt }
      return { status: 'skipped', reason: err.code }
    }
  }
}

/** Why a claimed reminder must not go out now, if it must not. */
function stale(a: AppointmentInfo | null, r: ClaimedReminder, now: Date): Outcome | null {
  if (!a) return { status: 'cancelled', reason: 'the appointment no longer exists' }
  if (!REMINDED_STATUSES.includes(a.status))
    return { status: 'cancelled', reason: `the appointment is ${a.status}` }
  if (new Date(a.starts_at).getTime() !== r.startsAt.getTime())
    return { status: 'cancelled', reason: 'the appointment moved' }
  if (now >= r.startsAt) return { status: 'skipped', reason: 'the appointment had started' }
  return null
}
