import { signLink, type EventData } from '@clinic/platform/core'
import { WAITLIST_LINK } from '../domain/link-kinds'
import { localTime, type LocalTime } from '../domain/local-time'
import { templateLanguage } from '../domain/templates'

/** What an offer's message says of it: the event's slot, whose, where and until when. */
export type OfferedSlot = Pick<
  EventData<'waitlist.entry.offered'>,
  'offer_id' | 'starts_at' | 'time_zone' | 'codalmacen' | 'offered_practitioner' | 'expires_at'
>

export interface OfferText {
  subject: string
  body: string
}

interface Parts {
  name: string
  at: LocalTime
  until: LocalTime
  center: string
  practitioner: string
  url: string
}

const TEXTS = {
  es: {
    locale: 'es-ES',
    subject: 'Hay una cita libre para usted',
    body: (p: Parts) =>
      `Hola ${p.name}: se ha liberado una cita de su lista de espera el ${p.at.date} a las ${p.at.time} ` +
      `(${p.at.zone}) en el centro ${p.center} con ${p.practitioner}. La guardamos para usted hasta las ` +
      `${p.until.time} del ${p.until.date}. Acéptela o recházela aquí: ${p.url}`,
  },
  en: {
    locale: 'en-GB',
    subject: 'An appointment is free for you',
    body: (p: Parts) =>
      `Hello ${p.name}, an appointment from your waitlist has become free on ${p.at.date} at ${p.at.time} ` +
      `(${p.at.zone}) at centre ${p.center} with ${p.practitioner}. We are holding it for you until ` +
      `${p.until.time} on ${p.until.date}. Accept or decline it here: ${p.url}`,
  },
} as const

/**
 * The waitlist_offer text in the recipient's language (es, en; others es), with the slot's local
 * date and time in its own time zone, and the offer's link: a signed token naming the company and
 * the offer, expiring with it (`expires_at`).
 */
/** How long an offer's link opens after the offer's expiry: its page then shows what became of it. */
export const LINK_GRACE_SECONDS = 30 * 86_400

export async function offerText(
  offer: OfferedSlot,
  language: string,
  name: string,
  companyId: number,
  link: { baseUrl: string; secret: string },
): Promise<OfferText> {
  const lang = templateLanguage(language)
  const t = TEXTS[lang]
  const token = await signLink(link.secret, WAITLIST_LINK, {
    companyId,
    offerId: offer.offer_id,
    lang,
    // The offer's own state (appointments') says when it is over; the token outlives it, so the
    // page answers "expired" (or what became of it) rather than "invalid", whatever the clocks.
    exp: Math.floor(Date.parse(offer.expires_at) / 1000) + LINK_GRACE_SECONDS,
  })
  const body = t.body({
    name,
    at: localTime(offer.starts_at, offer.time_zone, t.locale),
    until: localTime(offer.expires_at, offer.time_zone, t.locale),
    center: offer.codalmacen,
    practitioner: offer.offered_practitioner,
    url: `${link.baseUrl.replace(/\/+$/, '')}/p/w/${token}`,
  })
  return { subject: t.subject, body }
}
