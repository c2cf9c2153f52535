import type { KeysetAfter, Trace } from '@clinic/platform/core'
import type { Knex } from 'knex'
import type { Reminder, ReminderPolicy, ReminderPolicyInput, ReminderStatus } from '../schemas/reminder'
import type { AppointmentSlot } from './plan'

/** A claimed reminder, as the worker needs it. */
export interface ClaimedReminder {
  companyId: number
  id: string
  appointmentId: string
  patientId: string
  startsAt: Date
  confirmLink: boolean
  /** The claim's attempt number: the outcome is written only while it is still this one. */
  attempts: number
  /** What scheduled it (W3C): sending it is a span of that trace. */
  traceparent: string | null
}

export interface ReminderFilter {
  centers: string[] | null
  appointmentId?: string
  status?: ReminderStatus
  /** The position of a cursor of `REMINDER_KEYSET` (read-reminders.ts): rows strictly past it. */
  after?: KeysetAfter
  offset: number
  limit: number
}

/** How a claimed reminder ended (or when to try it again: `retryAt`, still `scheduled`). */
export interface ReminderOutcome {
  status: ReminderStatus
  reason?: string | null
  messageId?: string
  retryAt?: Date
}

/**
 * What the reminder routes, consumer and worker need from storage (db/repositories/
 * reminders-repository.ts), every statement under the company's row-level security. The methods
 * given a `trx` write in the caller's transaction: the consumer's (which also records the event
 * id) or the worker's (which also queues the message).
 */
export interface ReminderStore {
  policy(companyId: number, trx?: Knex.Transaction): Promise<ReminderPolicy>
  /** Replaces the policy; null when If-Match is given and does not match (none yet is version 0). */
  setPolicy(companyId: number, p: ReminderPolicyInput, ifMatch?: string): Promise<ReminderPolicy | null>
  /**
   * Brings an appointment's reminders in line with its state and the company's policy. An event
   * older than the state already applied (by the appointment's version) changes nothing. The
   * reminders it schedules keep `cause`'s trace context (the consumer's span of the event).
   */
  reconcile(
    trx: Knex.Transaction,
    companyId: number,
    slot: AppointmentSlot,
    scheduledAt: Date,
    cause?: Trace,
  ): Promise<void>
  /** Due reminders of every company, leased to this worker for `leaseMs`. */
  claim(now: Date, limit: number, leaseMs: number): Promise<ClaimedReminder[]>
  /** Of these claimed reminders (of one company), the ids still ours, locked for the rest of `trx`. */
  lockClaimed(trx: Knex.Transaction, claimed: ClaimedReminder[]): Promise<Set<string>>
  /** The reminder's outcome (in the transaction that locked it). */
  settle(trx: Knex.Transaction, r: ClaimedReminder, outcome: ReminderOutcome): Promise<void>
  list(companyId: number, f: ReminderFilter): Promise<{ rows: Reminder[]; total: number }>
}
