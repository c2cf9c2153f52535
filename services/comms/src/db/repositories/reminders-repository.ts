import {
  TenantRepository,
  companyRead,
  companyTransaction,
  isoInstant,
  keysetPageParts,
} from '@clinic/platform/db'
import { ifMatchAllows, uuidv7, type Trace } from '@clinic/platform/core'
import type { Knex } from 'knex'
import { planReminders, type AppointmentSlot } from '../../reminders/plan'
import { REMINDER_KEYSET } from '../../reminders/read-reminders'
import type {
  ClaimedReminder,
  ReminderFilter,
  ReminderOutcome,
  ReminderStore,
} from '../../reminders/reminder-store'
import type { Reminder, ReminderPolicy, ReminderPolicyInput, ReminderStatus } from '../../schemas/reminder'

const TABLE = 'reminders'
const COLUMNS = [
  'id',
  'appointment_id',
  'patient_id',
  'codalmacen',
  'offset_iso',
  'starts_at',
  'due_at',
  'status',
  'reason',
  'message_id',
  'created_at',
  'updated_at',
]

export const DEFAULT_POLICY: ReminderPolicy = {
  enabled: false,
  offsets: ['P1D'],
  quiet_hours: null,
  confirm_links: true,
  updated_at: null,
  version: 0,
}

const iso = (v: unknown) => isoInstant(v as Date | string | null) as string

export function toReminder(r: Record<string, unknown>): Reminder {
  return {
    id: r.id as string,
    appointment_id: r.appointment_id as string,
    patient_id: r.patient_id as string,
    codalmacen: (r.codalmacen as string | null) ?? null,
    offset: r.offset_iso as string,
    starts_at: iso(r.starts_at),
    due_at: iso(r.due_at),
    status: r.status as ReminderStatus,
    reason: (r.reason as string | null) ?? null,
    message_id: (r.message_id as string | null) ?? null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  }
}

function toPolicy(r: Record<string, unknown> | undefined): ReminderPolicy {
  if (!r) return DEFAULT_POLICY
  return {
    enabled: r.enabled as boolean,
    offsets: r.offsets as string[],
    quiet_hours: r.quiet_start ? { start: r.quiet_start as string, end: r.quiet_end as string } : null,
    confirm_links: r.confirm_links as boolean,
    updated_at: iso(r.updated_at),
    version: r.version as number,
  }
}

/** The policies and reminders of `comms`: every statement under the company's row-level security. */
export class RemindersRepository
  extends TenantRepository<Knex.Transaction, Reminder>
  implements ReminderStore
{
  constructor(knex: Knex) {
    super(knex, { name: TABLE, columns: COLUMNS, toRow: toReminder })
  }

  protected tx(_companyId: number, trx: Knex.Transaction) {
    return trx
  }

  async policy(companyId: number, trx?: Knex.Transaction): Promise<ReminderPolicy> {
    const q = (trx ?? this.knex)('reminder_policies').where('idempresa', companyId)
    const [row] = trx ? await q : await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return toPolicy(row)
  }

  /** Replaces the policy; null when If-Match is given and does not match (none yet is version 0). */
  setPolicy(companyId: number, p: ReminderPolicyInput, ifMatch?: string): Promise<ReminderPolicy | null> {
    return companyTransaction(this.knex, companyId, async (trx) => {
      const values = {
        enabled: p.enabled,
        offsets: p.offsets,
        quiet_start: p.quiet_hours?.start ?? null,
        quiet_end: p.quiet_hours?.end ?? null,
        confirm_links: p.confirm_links ?? true,
        updated_at: trx.raw(`date_trunc('milliseconds', now())`),
      }
      const current = await trx('reminder_policies').where('idempresa', companyId).forUpdate().first()
      if (ifMatch !== undefined && !ifMatchAllows(ifMatch, (current?.version as number) ?? 0)) return null
      const [row] = current
        ? await trx('reminder_policies')
            .where('idempresa', companyId)
            .update({ ...values, version: trx.raw('version + 1') })
            .returning('*')
        : await trx('reminder_policies')
            .insert({ idempresa: companyId, ...values })
            .returning('*')
      return toPolicy(row as Record<string, unknown>)
    })
  }

  /**
   * Brings an appointment's reminders in line with its state and the company's policy, in the
   * consumer's transaction: pending reminders it no longer wants are cancelled, missing ones are
   * scheduled (a cancelled one for the same offset and start comes back). An event older than the
   * state already applied (by the appointment's version) changes nothing.
   */
  async reconcile(
    trx: Knex.Transaction,
    companyId: number,
    slot: AppointmentSlot,
    scheduledAt: Date,
    cause: Trace = {},
  ): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`comms.reminders:${companyId}:${slot.id}`])
    const seen = await trx(TABLE)
      .where({ idempresa: companyId, appointment_id: slot.id })
      .max<{ v: number | null }>('appointment_version as v')
      .first()
    if (seen?.v != null && seen.v >= slot.version) return
    const policy = await this.policy(companyId, trx)
    const plan = planReminders(slot, policy, scheduledAt)
    const keep = plan.map((p) => p.offset)
    await trx(TABLE)
      .where({ idempresa: companyId, appointment_id: slot.id, status: 'scheduled' })
      .where((q) => q.whereNot('starts_at', slot.starts_at).orWhereNotIn('offset_iso', keep))
      .update({
        status: 'cancelled',
        reason: slot.active ? 'the appointment moved' : `the appointment is ${slot.status}`,
        updated_at: trx.raw(`date_trunc('milliseconds', now())`),
        version: trx.raw('version + 1'),
      })
    await trx(TABLE)
      .where({ idempresa: companyId, appointment_id: slot.id })
      .update({ appointment_version: slot.version })
    if (!plan.length) return
    const rows = plan.map((p) => ({
      idempresa: companyId,
      id: uuidv7(),
      appointment_id: slot.id,
      patient_id: slot.patient_id,
      codalmacen: slot.codalmacen,
      offset_iso: p.offset,
      starts_at: slot.starts_at,
      time_zone: slot.time_zone,
      appointment_version: slot.version,
      due_at: p.dueAt,
      next_attempt_at: p.dueAt,
      status: p.skipped ? 'skipped' : 'scheduled',
      reason: p.skipped,
      confirm_link: policy.confirm_links,
      traceparent: cause.traceparent ?? null,
    }))
    await trx.raw(
      `? ON CONFLICT (idempresa, appointment_id, offset_iso, starts_at) DO UPDATE
         SET status = excluded.status, reason = excluded.reason, due_at = excluded.due_at,
           next_attempt_at = excluded.next_attempt_at, confirm_link = excluded.confirm_link,
           traceparent = excluded.traceparent, updated_at = date_trunc('milliseconds', now()), version = reminders.version + 1
         WHERE reminders.status = 'cancelled'`,
      [trx(TABLE).insert(rows)],
    )
  }

  /** Due reminders of every company, leased to this worker for `leaseMs` (claim_reminders). */
  async claim(now: Date, limit: number, leaseMs: number): Promise<ClaimedReminder[]> {
    const { rows } = await this.knex.raw<{ rows: Array<Record<string, unknown>> }>(
      'SELECT * FROM claim_reminders(?, ?, make_interval(secs => ?))',
      [now, limit, leaseMs / 1000],
    )
    return rows.map((r) => ({
      companyId: r.idempresa as number,
      id: r.id as string,
      appointmentId: r.appointment_id as string,
      patientId: r.patient_id as string,
      startsAt: new Date(r.starts_at as string),
      confirmLink: r.confirm_link as boolean,
      attempts: r.attempts as number,
      traceparent: (r.traceparent as string | null) ?? null,
    }))
  }

  /**
   * Of these claimed reminders, those still ours (scheduled, and no other claim since ours),
   * locked for the rest of `trx`: their ids.
   */
  async lockClaimed(trx: Knex.Transaction, claimed: ClaimedReminder[]): Promise<Set<string>> {
    if (!claimed.length) return new Set()
    const rows = (await trx(TABLE)
      .where({ idempresa: claimed[0]!.companyId, status: 'scheduled' })
      .whereIn(
        ['id', 'attempts'],
        claimed.map((r) => [r.id, r.attempts]),
      )
      .orderBy('id')
      .forUpdate()
      .select('id')) as Array<{ id: string }>
    return new Set(rows.map((r) => r.id))
  }

  /** The reminder's outcome (in the transaction that locked it). */
  async settle(trx: Knex.Transaction, r: ClaimedReminder, outcome: ReminderOutcome): Promise<void> {
    await trx(TABLE)
      .where({ idempresa: r.companyId, id: r.id })
      .update({
        status: outcome.status,
        reason: outcome.reason ?? null,
        message_id: outcome.messageId ?? null,
        ...(outcome.retryAt ? { next_attempt_at: outcome.retryAt } : {}),
        updated_at: trx.raw(`date_trunc('milliseconds', now())`),
        version: trx.raw('version + 1'),
      })
  }

  list(companyId: number, f: ReminderFilter): Promise<{ rows: Reminder[]; total: number }> {
    const matching = this.knex(TABLE).where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.appointmentId) matching.where('appointment_id', f.appointmentId)
    if (f.status) matching.where('status', f.status)
    return this.page(companyId, keysetPageParts(matching, COLUMNS, REMINDER_KEYSET, f))
  }
}
