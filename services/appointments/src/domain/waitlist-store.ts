import type { KeysetAfter, TenantStore, WaitlistOffer } from '@clinic/platform/core'
import type { EntryStatus, WaitlistEntry } from '../schemas/waitlist'
import type { AppointmentStore, AppointmentTx } from './appointment-store'

/** What the waitlist needs from storage (DESIGN.md section 20), on top of the calendar's. */
export interface WaitlistStore extends TenantStore<WaitlistTx, WaitlistEntry> {
  availability: AppointmentStore['availability']
  entries(companyId: number, f: EntryFilter): Promise<{ rows: WaitlistEntry[]; total: number }>
  /** The offer `id` of the company, or null. */
  offer(companyId: number, id: string): Promise<OfferRow | null>
  /** Due jobs of every company, leased for `leaseMs` (claim_waitlist_jobs). */
  claimJobs(now: Date, limit: number, leaseMs: number): Promise<WaitlistJob[]>
  /** Companies with offers, holds or entries past `now` (waitlist_lapsed_companies). */
  lapsedCompanies(now: Date): Promise<number[]>
}

export interface EntryFilter {
  centers: string[] | null
  status?: EntryStatus
  practitioner?: string
  patientId?: string
  offset: number
  limit: number
  after?: KeysetAfter
}

/** An entry's matching fields, as the offer job reads them. */
export interface Candidate {
  id: string
  patient_id: string
  codalmacen: string
  practitioner: string | null
  duration_minutes: number
  earliest: string | null
  latest: string | null
  /** ISO weekdays, 1 Monday .. 7 Sunday. */
  days: number[] | null
  times: { from: string; to: string } | null
  time_zone: string
  channel: 'email' | 'sms' | null
  version: number
}

export interface OfferRow extends WaitlistOffer {
  sends_at: string
}

interface JobBase {
  id: string
  companyId: number
  attempts: number
  traceparent: string | null
}
export type WaitlistJob =
  | (JobBase & { kind: 'freed'; practitioner: string; codalmacen: string; from: string; to: string })
  | (JobBase & { kind: 'announce'; offerId: string })

export interface WaitlistTx extends AppointmentTx {
  insertEntry(
    entry: Omit<Candidate, 'version'> & { priority: number; notes: string | null },
  ): Promise<WaitlistEntry>
  /** The entry with its open offer (locked with `forUpdate`), or null. */
  entryById(id: string, forUpdate?: boolean): Promise<WaitlistEntry | null>
  setEntry(id: string, status: EntryStatus, appointmentId?: string | null): Promise<WaitlistEntry>
  /**
   * The first waiting entry (priority, then age) at `codalmacen` for `practitioner` (or any) whose
   * duration fits `[from, to)`, not among `exclude`, never offered a slot in that span it declined;
   * locked (SKIP LOCKED: another job's entry is passed over), or null.
   */
  nextWaiting(c: {
    codalmacen: string
    practitioner: string
    from: string
    to: string
    exclude: string[]
  }): Promise<Candidate | null>
  insertOffer(o: Omit<OfferRow, 'state' | 'appointment_id'>): Promise<void>
  offerById(id: string, forUpdate?: boolean): Promise<OfferRow | null>
  setOffer(id: string, state: OfferRow['state'], appointmentId?: string | null): Promise<OfferRow>
  /** Whether nothing live claims [from, to) of the practitioner (holds expired by `now` do not). */
  isFree(practitioner: string, from: string, to: string, now: Date): Promise<boolean>
  /** Open offers past `now`, marked expired (their holds stay for deleteHold). */
  expireOffers(now: Date): Promise<OfferRow[]>
  /** Waiting entries whose `latest` has passed, marked expired. */
  expireEntries(now: Date): Promise<WaitlistEntry[]>
  /** Deletes the hold `id` (any expiry): what an answered or expired offer leaves. */
  deleteHold(id: string): Promise<void>
  /** Deletes the company's holds expired by `now`: the calendar trigger queues the freed time. */
  sweepHolds(now: Date): Promise<number>
  addAnnounce(offerId: string, at: string, traceparent: string | null): Promise<void>
  /** Ends a claimed job (done, or nothing left to do). */
  finishJob(id: string): Promise<void>
}
