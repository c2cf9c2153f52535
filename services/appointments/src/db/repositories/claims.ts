import { runPrepared } from '@clinic/platform/db'
import type { Knex } from 'knex'
import { SlotConflict } from '../../domain/errors'
import { purgeExpiredHolds } from './calendar-sql'

/** What every claim of a practitioner's time does first, and how its refusal reads. */

/** The exclusion constraints (migrations 0002 and 0005), by the holder of the slot they protect. */
const OVERLAP_CONSTRAINTS = {
  calendar_overlap: 'practitioner',
  appointments_patient_overlap: 'patient',
} as const

export async function translate<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    const { code, constraint } = err as { code?: string; constraint?: string }
    // 23P01 exclusion_violation: another active appointment overlaps (maybe one committed an
    // instant ago by a concurrent request; the constraint waited for it).
    if (code === '23P01' && constraint && constraint in OVERLAP_CONSTRAINTS)
      throw new SlotConflict(OVERLAP_CONSTRAINTS[constraint as keyof typeof OVERLAP_CONSTRAINTS])
    throw err
  }
}

/**
 * Takes the transaction's advisory locks on the practitioner's and the patient's calendars before a
 * write that may overlap, always in the same order. Without them, concurrent inserts that collide
 * on both exclusion constraints can each wait for the other inside the index check, and PostgreSQL
 * breaks the cycle with `deadlock detected` (seen with ten bookings of one patient with ten
 * practitioners) after a second, instead of an immediate 409. The constraints still decide.
 */
export async function lockCalendars(
  trx: Knex.Transaction,
  companyId: number,
  practitioner: string,
  patientId: string | null,
) {
  const keys = [`appointments:${companyId}:practitioner:${practitioner}`]
  if (patientId) keys.push(`appointments:${companyId}:patient:${patientId}`)
  keys.sort()
  // One statement (prepared: two texts, with and without a patient); PostgreSQL evaluates the
  // target list left to right, so in this order.
  const locks = keys.map(() => 'pg_advisory_xact_lock(hashtextextended(?, 0))')
  await runPrepared(trx, `SELECT ${locks.join(', ')}`, keys)
}

/**
 * Before a claim of [starts_at, ends_at) for the practitioner (and the patient, when one): the
 * calendar locks, then the expired holds of that time go.
 */
export async function prepareClaim(
  trx: Knex.Transaction,
  companyId: number,
  clock: () => Date,
  c: { practitioner: string; patientId: string | null; starts_at: string; ends_at: string },
) {
  await lockCalendars(trx, companyId, c.practitioner, c.patientId)
  // The time after the lock: a claim that waited for it sees the holds that expired meanwhile.
  await purgeExpiredHolds(trx, companyId, { ...c, now: clock() })
}
