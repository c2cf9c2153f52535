import { FAILURE_STATUS, type FailurePage, type PageLanguage } from '@clinic/platform/http'
import type { LinkPage } from '../domain/patient-links'
import { actionForm, linkPageHtml, para, slotDetails } from './page-kit'

/**
 * The patient link page (platform link kit: shell, headers, escaping, language), in Spanish or
 * English. Every value that comes from data goes through `esc`.
 */
type Lang = PageLanguage

/** What the page may show: the use case's pages, and those the route makes of errors. */
export type PageView = LinkPage | FailurePage

export const PAGE_STATUS: Record<PageView['kind'], number> = {
  ...FAILURE_STATUS,
  open: 200,
  done: 200,
  not_found: 404,
  closed: 409,
  expired: 410,
  used: 410,
}

const TEXTS = {
  es: {
    locale: 'es-ES',
    title: 'Su cita',
    date: 'Fecha',
    time: 'Hora',
    center: 'Centro',
    practitioner: 'Profesional',
    question: '¿Podrá venir? Confírmelo o cancele la cita.',
    alreadyConfirmed: 'Su cita ya está confirmada. Si no puede venir, cancélela aquí.',
    confirm: 'Confirmar',
    cancel: 'Cancelar la cita',
    confirmed: 'Su cita está confirmada',
    confirmedLead: 'Gracias. Le esperamos.',
    cancelled: 'Su cita está cancelada',
    cancelledLead: 'Gracias por avisarnos. Para pedir otra cita, contacte con la clínica.',
    used: 'Este enlace ya se ha usado',
    usedFor: { confirm: 'Con él se confirmó la cita.', cancel: 'Con él se canceló la cita.' },
    expired: 'Este enlace ha caducado',
    expiredLead: 'La cita ya ha empezado o ha pasado.',
    invalid: 'Este enlace no es válido',
    invalidLead: 'Compruebe que lo ha abierto completo, tal como le llegó.',
    notFound: 'No encontramos esta cita',
    closed: 'Esta cita ya no se puede cambiar aquí',
    status: 'Estado',
    unavailable: 'Ahora no podemos atenderle',
    unavailableLead: 'Inténtelo de nuevo dentro de unos minutos con el mismo enlace.',
    contact: 'Si necesita algo, contacte con la clínica.',
    statuses: {
      scheduled: 'programada',
      confirmed: 'confirmada',
      checked_in: 'en la clínica',
      completed: 'realizada',
      cancelled: 'cancelada',
      no_show: 'no acudió',
    } as Record<string, string>,
  },
  en: {
    locale: 'en-GB',
    title: 'Your appointment',
    date: 'Date',
    time: 'Time',
    center: 'Centre',
    practitioner: 'Practitioner',
    question: 'Will you come? Please confirm, or cancel the appointment.',
    alreadyConfirmed: 'Your appointment is already confirmed. If you cannot come, cancel it here.',
    confirm: 'Confirm',
    cancel: 'Cancel appointment',
    confirmed: 'Your appointment is confirmed',
    confirmedLead: 'Thank you. We look forward to seeing you.',
    cancelled: 'Your appointment is cancelled',
    cancelledLead: 'Thank you for letting us know. To book another one, contact the clinic.',
    used: 'This link has already been used',
    usedFor: {
      confirm: 'The appointment was confirmed with it.',
      cancel: 'The appointment was cancelled with it.',
    },
    expired: 'This link has expired',
    expiredLead: 'The appointment has started or is over.',
    invalid: 'This link is not valid',
    invalidLead: 'Check that you opened all of it, as you received it.',
    notFound: 'We could not find this appointment',
    closed: 'This appointment can no longer be changed here',
    status: 'Status',
    unavailable: 'We cannot take your answer right now',
    unavailableLead: 'Please try again in a few minutes with the same link.',
    contact: 'If you need anything, contact the clinic.',
    statuses: {
      scheduled: 'scheduled',
      confirmed: 'confirmed',
      checked_in: 'checked in',
      completed: 'completed',
      cancelled: 'cancelled',
      no_show: 'missed',
    } as Record<string, string>,
  },
} as const
type Texts = (typeof TEXTS)[Lang]

/** The heading and the body of each page. */
function content(view: PageView, t: Texts): { heading: string; body: string } {
  switch (view.kind) {
    case 'open': {
      const lead = view.actions.includes('confirm') ? t.question : t.alreadyConfirmed
      const forms = view.actions.map((a) => actionForm(a, a === 'confirm' ? t.confirm : t.cancel)).join('')
      return { heading: t.title, body: para(lead) + slotDetails(view.appointment, t) + forms }
    }
    case 'done': {
      const confirmed = view.action === 'confirm'
      return {
        heading: confirmed ? t.confirmed : t.cancelled,
        body: para(confirmed ? t.confirmedLead : t.cancelledLead) + slotDetails(view.appointment, t),
      }
    }
    case 'used':
      return { heading: t.used, body: para(t.usedFor[view.action]) + para(t.contact) }
    case 'expired':
      return { heading: t.expired, body: para(t.expiredLead) + para(t.contact) }
    case 'invalid':
      return { heading: t.invalid, body: para(t.invalidLead) + para(t.contact) }
    case 'not_found':
      return { heading: t.notFound, body: para(t.contact) }
    case 'closed': {
      const a = view.appointment
      const status = a ? para(`${t.status}: ${t.statuses[a.status] ?? a.status}`) + slotDetails(a, t) : ''
      return { heading: t.closed, body: status + para(t.contact) }
    }
    case 'unavailable':
    case 'error':
      return { heading: t.unavailable, body: para(t.unavailableLead) }
  }
}

/** The whole page and its status code. */
export function renderLinkPage(view: PageView, lang: Lang): { status: number; html: string } {
  const t = TEXTS[lang]
  const { heading, body } = content(view, t)
  const html = linkPageHtml(lang, heading, body)
  return { status: PAGE_STATUS[view.kind], html }
}
