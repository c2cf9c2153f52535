import { makeEvent, type CloudEvent, type Ctx, type EventData } from '@clinic/platform/core'
import type { OfferRow } from '../domain/waitlist-store'
import type { WaitlistEntry } from '../schemas/waitlist'
import { SOURCE } from './appointment-events'

/** Whose entry, where and its status: never notes. */
const entryData = (e: WaitlistEntry) => ({
  id: e.id,
  patient_id: e.patient_id,
  codalmacen: e.codalmacen,
  practitioner: e.practitioner,
  status: e.status,
  version: e.version,
})

const envelope = (ctx: Ctx, e: WaitlistEntry) => ({
  source: SOURCE,
  subject: e.id,
  companyId: ctx.auth.companyId,
  codalmacen: e.codalmacen,
  ctx,
})

type EntryEvent = 'waitlist.entry.created' | 'waitlist.entry.cancelled'

export const entryEvent = (ctx: Ctx, type: EntryEvent, e: WaitlistEntry): CloudEvent<EntryEvent> =>
  makeEvent({ type, ...envelope(ctx, e), data: entryData(e) })

/** What comms needs to send the offer (DESIGN.md section 20). */
export const entryOffered = (
  ctx: Ctx,
  e: WaitlistEntry,
  o: OfferRow,
  channel: 'email' | 'sms' | null,
): CloudEvent<'waitlist.entry.offered'> =>
  makeEvent({
    type: 'waitlist.entry.offered',
    ...envelope(ctx, e),
    data: {
      ...entryData(e),
      offer_id: o.id,
      starts_at: o.starts_at,
      ends_at: o.ends_at,
      offered_practitioner: o.practitioner,
      time_zone: o.time_zone,
      expires_at: o.expires_at,
      channel,
    } satisfies EventData<'waitlist.entry.offered'>,
  })

export const entryDeclined = (ctx: Ctx, e: WaitlistEntry, offerId: string) =>
  makeEvent({
    type: 'waitlist.entry.declined',
    ...envelope(ctx, e),
    data: { ...entryData(e), offer_id: offerId },
  })

export const entryBooked = (ctx: Ctx, e: WaitlistEntry, offerId: string, appointmentId: string) =>
  makeEvent({
    type: 'waitlist.entry.booked',
    ...envelope(ctx, e),
    data: { ...entryData(e), offer_id: offerId, appointment_id: appointmentId },
  })

export const entryExpired = (ctx: Ctx, e: WaitlistEntry, offerId: string | null) =>
  makeEvent({
    type: 'waitlist.entry.expired',
    ...envelope(ctx, e),
    data: { ...entryData(e), offer_id: offerId },
  })
