import { FAILURE_STATUS, esc, type FailurePage, type PageLanguage } from '@clinic/platform/http'
import type { OfferInfo } from '../domain/directories'
import { localTime } from '../domain/local-time'
import type { OfferPage } from '../domain/offer-links'
import { actionForm, linkPageHtml, para, slotDetails } from './page-kit'

/**
 * The waitlist offer page (`/p/w/<token>`; platform link kit: shell, headers, escaping, language),
 * in Spanish or English, laid out as the appointment page (page-kit.ts).
 */
export type OfferView = OfferPage | FailurePage

export const OFFER_PAGE_STATUS: Record<OfferView['kind'], number> = {
  ...FAILURE_STATUS,
  open: 200,
  accepted: 200,
  declined: 200,
  not_found: 404,
  taken: 409,
  expired: 410,
}

const TEXTS = {
  es: {
    locale: 'es-ES',
    date: 'Fecha',
    time: 'Hora',
    center: 'Centro',
    practitioner: 'Profesional',
    heldUntil: 'Reservada para usted hasta',
    title: 'Hay una cita libre para usted',
    lead: 'Se ha liberado una cita que encaja con su petición en la lista de espera. La guardamos para usted hasta la hora indicada: acéptela o recházela.',
    accept: 'Aceptar la cita',
    decline: 'Rechazar',
    accepted: 'Su cita está reservada',
    acceptedLead: 'Gracias. Le esperamos.',
    declined: 'Ha rechazado esta cita',
    declinedLead: 'Sigue en la lista de espera: le avisaremos si se libera otra.',
    taken: 'Lo sentimos: la clínica ha ocupado esta cita',
    takenLead:
      'Mientras tanto la clínica ha dado esta hora a otra persona. Sigue en la lista de espera: le avisaremos si se libera otra.',
    expired: 'Esta oferta ha caducado',
    expiredLead:
      'El plazo para aceptarla ha pasado. Si sigue en la lista de espera, le avisaremos de la próxima.',
    invalid: 'Este enlace no es válido',
    invalidLead: 'Compruebe que lo ha abierto completo, tal como le llegó.',
    notFound: 'No encontramos esta oferta',
    unavailable: 'Ahora no podemos atenderle',
    unavailableLead: 'Inténtelo de nuevo dentro de unos minutos con el mismo enlace.',
    contact: 'Si necesita algo, contacte con la clínica.',
  },
  en: {
    locale: 'en-GB',
    date: 'Date',
    time: 'Time',
    center: 'Centre',
    practitioner: 'Practitioner',
    heldUntil: 'Held for you until',
    title: 'An appointment is free for you',
    lead: 'An appointment matching your waitlist request has become free. We are holding it for you until the time below: accept or decline it.',
    accept: 'Accept',
    decline: 'Decline',
    accepted: 'Your appointment is booked',
    acceptedLead: 'Thank you. We look forward to seeing you.',
    declined: 'You declined this appointment',
    declinedLead: 'You stay on the waitlist: we will let you know when another one becomes free.',
    taken: 'Sorry, the clinic has taken this appointment',
    takenLead:
      'The clinic gave this time to someone else meanwhile. You stay on the waitlist: we will let you know when another one becomes free.',
    expired: 'This offer has expired',
    expiredLead:
      'The time to accept it has passed. If you are still on the waitlist, we will let you know of the next one.',
    invalid: 'This link is not valid',
    invalidLead: 'Check that you opened all of it, as you received it.',
    notFound: 'We could not find this offer',
    unavailable: 'We cannot take your answer right now',
    unavailableLead: 'Please try again in a few minutes with the same link.',
    contact: 'If you need anything, contact the clinic.',
  },
} as const
type Texts = (typeof TEXTS)[PageLanguage]

/** The slot, and (while open) until when it is held, in the offer's own time zone. */
function details(offer: OfferInfo, t: Texts, held: boolean): string {
  if (!held) return slotDetails(offer, t)
  const until = localTime(offer.expires_at, offer.time_zone, t.locale)
  return slotDetails(offer, t, [[t.heldUntil, `${esc(until.time)} <small>(${esc(until.date)})</small>`]])
}

/** The heading and the body of each page. */
function content(view: OfferView, t: Texts): { heading: string; body: string } {
  switch (view.kind) {
    case 'open': {
      const forms = actionForm('accept', t.accept) + actionForm('decline', t.decline)
      return { heading: t.title, body: para(t.lead) + details(view.offer, t, true) + forms }
    }
    case 'accepted':
      return { heading: t.accepted, body: para(t.acceptedLead) + details(view.offer, t, false) }
    case 'declined':
      return { heading: t.declined, body: para(t.declinedLead) + details(view.offer, t, false) }
    case 'taken':
      return { heading: t.taken, body: para(t.takenLead) + para(t.contact) }
    case 'expired':
      return { heading: t.expired, body: para(t.expiredLead) + para(t.contact) }
    case 'invalid':
      return { heading: t.invalid, body: para(t.invalidLead) + para(t.contact) }
    case 'not_found':
      return { heading: t.notFound, body: para(t.contact) }
    case 'unavailable':
    case 'error':
      return { heading: t.unavailable, body: para(t.unavailableLead) }
  }
}

/** The whole page and its status code. */
export function renderOfferPage(view: OfferView, lang: PageLanguage): { status: number; html: string } {
  const { heading, body } = content(view, TEXTS[lang])
  return { status: OFFER_PAGE_STATUS[view.kind], html: linkPageHtml(lang, heading, body) }
}
