import { uuidv7, type CallCtx, type Ctx, type WaitlistOffer } from '@clinic/platform/core'
import { entryBooked, entryDeclined, entryExpired, entryOffered } from '../events/waitlist-events'
import { appointmentCreated } from '../events/appointment-events'
import type { Slot } from '../schemas/availability'
import { SlotConflict } from './errors'
import { newAppointmentFields } from './rules'
import { fitsEntry } from './waitlist-match'
import type { Candidate, OfferRow, WaitlistStore, WaitlistTx } from './waitlist-store'

/** Who makes offers and lets them lapse, on the audit trail. */
export const WAITLIST_ACTOR = 'appointments-waitlist'

export interface OfferDeps {
  store: WaitlistStore
  clock: () => Date
  /** WAITLIST_OFFER_MINUTES: how long an offer holds its slot once the patient is told. */
  offerMinutes: number
  /** comms' send window: when a message may go out after the company's quiet hours. */
  sendWindow(ctx: CallCtx, at: Date, timeZone: string): Promise<Date>
}

const MINUTE = 60_000
/** Entries looked at per freed span: enough for a day's cancellations, bounded per job. */
const MAX_ENTRIES = 50

/**
 * Offers the free time of a freed span (a cancellation, a move, a released or expired hold, new
 * working hours) to the waitlist (DESIGN.md section 20): entry after entry in order (priority, then
 * age), the first free slot that fits each is held for it and offered. Under the practitioner's
 * calendar lock: no other claim of that practitioner runs meanwhile, so the slots read are free
 * until this commits, and two jobs of one practitioner run one after the other (two freed slots go
 * to two entries). Entries another job holds are passed over (SKIP LOCKED).
 */
export async function offerFreedTime(
  ctx: Ctx,
  deps: OfferDeps,
  job: { id: string; practitioner: string; codalmacen: string; from: string; to: string },
): Promise<number> {
  const now = deps.clock()
  const from = new Date(Math.max(Date.parse(job.from), now.getTime()))
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    await tx.finishJob(job.id)
    if (from.getTime() >= Date.parse(job.to)) return 0
    await tx.lockCalendars(job.practitioner, null)
    const span = {
      practitioner: job.practitioner,
      codalmacen: job.codalmacen,
      from: from.toISOString(),
      to: job.to,
    }
    const registered = (await tx.practitionerZone(job.practitioner)) !== null
    const taken: Slot[] = []
    const tried: string[] = []
    while (tried.length < MAX_ENTRIES) {
      const entry = await tx.nextWaiting({ ...span, exclude: tried })
      if (!entry) break
      tried.push(entry.id)
      const slot = await firstSlot(ctx, deps, tx, { span, entry, registered, taken, now })
      if (!slot) continue
      await makeOffer(ctx, deps, tx, entry, slot, now)
      taken.push(slot)
    }
    return taken.length
  })
}

const ms = Date.parse
const overlaps = (a: Slot, b: Slot) => ms(a.starts_at) < ms(b.ends_at) && ms(b.starts_at) < ms(a.ends_at)

/** The earliest free slot of the span that fits the entry, not among those offered in this job. */
async function firstSlot(
  ctx: Ctx,
  deps: OfferDeps,
  tx: WaitlistTx,
  c: {
    span: { practitioner: string; codalmacen: string; from: string; to: string }
    entry: Candidate
    registered: boolean
    taken: Slot[]
    now: Date
  },
): Promise<Slot | null> {
  const { span, entry } = c
  const length = entry.duration_minutes * MINUTE
  const usable = (s: Slot) =>
    ms(s.ends_at) <= ms(span.to) && fitsEntry(entry, s) && !c.taken.some((t) => overlaps(t, s))
  if (c.registered) {
    // Free slots of a registered practitioner: within hours, off time off, clear of every claim.
    const slots = await deps.store.availability(ctx.auth.companyId, {
      center: span.codalmacen,
      from: span.from,
      to: span.to,
      practitioners: [span.practitioner],
      duration: entry.duration_minutes,
      limit: 200,
    })
    return slots.find(usable) ?? null
  }
  // A practitioner without hours: the freed span itself, from its start, in 5-minute steps.
  for (let t = Date.parse(span.from); t + length <= Date.parse(span.to); t += 5 * MINUTE) {
    const slot = {
      practitioner: span.practitioner,
      codalmacen: span.codalmacen,
      starts_at: new Date(t).toISOString(),
      ends_at: new Date(t + length).toISOString(),
    }
    if (usable(slot) && (await tx.isFree(span.practitioner, slot.starts_at, slot.ends_at, c.now))) return slot
  }
  return null
}

/**
 * Holds the slot for the entry (a calendar hold whose id is the offer's, no patient: staff may
 * still book it for anyone with `hold_id`) and offers it. In the company's quiet hours the patient
 * is told when they end (an announce job), the hold counted from then.
 */
async function makeOffer(ctx: Ctx, deps: OfferDeps, tx: WaitlistTx, entry: Candidate, slot: Slot, now: Date) {
  const sendsAt = await deps.sendWindow(ctx, now, entry.time_zone)
  const told = sendsAt > now ? sendsAt : now
  const expiresAt = new Date(told.getTime() + deps.offerMinutes * MINUTE)
  const offer: OfferRow = {
    id: uuidv7(),
    entry_id: entry.id,
    patient_id: entry.patient_id,
    codalmacen: slot.codalmacen,
    practitioner: slot.practitioner,
    starts_at: slot.starts_at,
    ends_at: slot.ends_at,
    time_zone: entry.time_zone,
    sends_at: told.toISOString(),
    expires_at: expiresAt.toISOString(),
    state: 'open',
    appointment_id: null,
  }
  await tx.insertHold({ ...slot, id: offer.id, patient_id: null, expires_at: offer.expires_at })
  const { state: _s, appointment_id: _a, ...row } = offer
  await tx.insertOffer(row)
  const offered = await tx.setEntry(entry.id, 'offered')
  if (told > now) await tx.addAnnounce(offer.id, offer.sends_at, ctx.traceparent ?? null)
  else await tx.publish([entryOffered(ctx, offered, offer, entry.channel)])
  ctx.log.info(
    { waitlist_entry_id: entry.id, offer_id: offer.id, announce: told > now },
    'waitlist slot offered',
  )
}

/** An offer held over quiet hours is told now, if it is still open. */
export async function announceOffer(ctx: Ctx, store: WaitlistStore, job: { id: string; offerId: string }) {
  const offerId = job.offerId
  await store.transaction(ctx.auth.companyId, async (tx) => {
    await tx.finishJob(job.id)
    const offer = await tx.offerById(offerId)
    if (offer?.state !== 'open') return
    const entry = (await tx.entryById(offer.entry_id))!
    await tx.publish([entryOffered(ctx, entry, offer, entry.channel)])
  })
}

/**
 * What time has let lapse in one company: offers left unanswered expire (their entry too: a
 * patient who does not answer is not offered again), entries past their latest date expire, and
 * holds past their expiry leave the calendar, which queues their time for the waitlist.
 */
export async function sweepLapsed(ctx: Ctx, deps: Pick<OfferDeps, 'store' | 'clock'>): Promise<void> {
  const now = deps.clock()
  await deps.store.transaction(ctx.auth.companyId, async (tx) => {
    for (const offer of await tx.expireOffers(now)) {
      const entry = await tx.entryById(offer.entry_id, true)
      if (entry?.status === 'offered') {
        const expired = await tx.setEntry(entry.id, 'expired')
        await tx.publish([entryExpired(ctx, expired, offer.id)])
      }
      await tx.deleteHold(offer.id)
    }
    for (const entry of await tx.expireEntries(now)) await tx.publish([entryExpired(ctx, entry, null)])
    await tx.sweepHolds(now)
  })
}

/** The offer as its page shows it: an open one past its expiry reads expired before the sweep. */
export function offerView(offer: OfferRow, now: Date): WaitlistOffer {
  const { sends_at: _s, ...view } = offer
  return view.state === 'open' && Date.parse(view.expires_at) <= now.getTime()
    ? { ...view, state: 'expired' }
    : view
}

/** `GET /internal/appointments/waitlist-offers/:id` (comms' offer page). */
export async function readOffer(ctx: Ctx, deps: Pick<OfferDeps, 'store' | 'clock'>, id: string) {
  const offer = await deps.store.offer(ctx.auth.companyId, id.toLowerCase())
  return offer ? offerView(offer, deps.clock()) : null
}

/**
 * The patient's answer through the offer's link: `accept` books the held slot (the hold becomes
 * the appointment in one transaction: nothing can take it in between), `decline` lets it go to the
 * next entry. An offer no longer open is answered as it stands. Null: no such offer.
 */
export async function answerOffer(
  ctx: Ctx,
  deps: Pick<OfferDeps, 'store' | 'clock'>,
  id: string,
  action: 'accept' | 'decline',
): Promise<WaitlistOffer | null> {
  const offerId = id.toLowerCase()
  const found = await deps.store.offer(ctx.auth.companyId, offerId)
  if (!found) return null
  try {
    return await deps.store.transaction(ctx.auth.companyId, async (tx) => {
      // The calendar's locks first, in the one order every claim takes them (then the rows).
      await tx.lockCalendars(found.practitioner, found.patient_id)
      const offer = (await tx.offerById(offerId, true))!
      const now = deps.clock()
      if (offer.state !== 'open' || Date.parse(offer.expires_at) <= now.getTime())
        return offerView(offer, now)
      const entry = (await tx.entryById(offer.entry_id, true))!
      if (action === 'decline') {
        const declined = await tx.setOffer(offerId, 'declined')
        const waiting = await tx.setEntry(entry.id, 'waiting')
        await tx.deleteHold(offerId)
        await tx.publish([entryDeclined(ctx, waiting, offerId)])
        return offerView(declined, now)
      }
      return offerView(await book(ctx, tx, offer), now)
    })
  } catch (err) {
    if (!(err instanceof SlotConflict)) throw err
    // The patient has another appointment then: the slot goes on to the next entry.
    ctx.log.info({ offer_id: offerId }, 'waitlist offer could not be booked: the patient is busy then')
    return deps.store.transaction(ctx.auth.companyId, async (tx) => {
      const taken = await tx.setOffer(offerId, 'taken')
      await tx.setEntry(found.entry_id, 'waiting')
      await tx.deleteHold(offerId)
      return offerView(taken, deps.clock())
    })
  }
}

async function book(ctx: Ctx, tx: WaitlistTx, offer: OfferRow): Promise<OfferRow> {
  const accepted = await tx.setOffer(offer.id, 'accepted')
  await tx.deleteHold(offer.id)
  const appointment = await tx.insert(
    uuidv7(),
    newAppointmentFields(
      {
        patient_id: offer.patient_id,
        codalmacen: offer.codalmacen,
        practitioner: offer.practitioner,
        starts_at: offer.starts_at,
        ends_at: offer.ends_at,
        time_zone: offer.time_zone,
      },
      { waitlist_entry_id: offer.entry_id },
    ),
  )
  const booked = await tx.setOffer(offer.id, 'accepted', appointment.id)
  const entry = await tx.setEntry(offer.entry_id, 'booked', appointment.id)
  await tx.publish([appointmentCreated(ctx, appointment), entryBooked(ctx, entry, offer.id, appointment.id)])
  ctx.log.info({ offer_id: offer.id, appointment_id: appointment.id }, 'waitlist offer accepted')
  return accepted.state === 'accepted' ? booked : accepted
}
