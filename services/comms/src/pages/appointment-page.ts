import { FAILURE_STATUS, esc, renderPage, type FailurePage, type PageLanguage } from '@clinic/platform/http'
import type { AppointmentInfo } from '../domain/directories'
import type { LinkAction, LinkPage } from '../domain/patient-links'

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

/** Date and time in the appointment's own time zone (a zone the runtime lacks: UTC, said so). */
function when(a: AppointmentInfo, t: Texts): { date: string; time: string; zone: string } {
  const at = new Date(a.starts_at)
  const format = (zone: string) => ({
    date: new Intl.DateTimeFormat(t.locale, { timeZone: zone, dateStyle: 'full' }).format(at),
    time: new Intl.DateTimeFormat(t.locale, {
      timeZone: zone,
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(at),
    zone: zone.replace(/_/g, ' '),
  })
  try {
    return format(a.time_zone)
  } catch {
    return format('UTC')
  }
}

function details(a: AppointmentInfo, t: Texts): string {
  const w = when(a, t)
  const row = (label: string, value: string) => `<dt>${esc(label)}</dt><dd>${value}</dd>`
  return `<dl>${[
    row(t.date, esc(w.date)),
    row(t.time, `${esc(w.time)} <small>(${esc(w.zone)})</small>`),
    row(t.center, esc(a.codalmacen)),
    row(t.practitioner, esc(a.practitioner)),
  ].join('')}</dl>`
}

const form = (action: LinkAction, label: string) =>
  `<form method="post"><input type="hidden" name="action" value="${esc(action)}">` +
  `<button type="submit" class="${action}">${esc(label)}</button></form>`

const p = (text: string) => `<p>${esc(text)}</p>`

/** The heading and the body of each page. */
function content(view: PageView, t: Texts): { heading: string; body: string } {
  switch (view.kind) {
    case 'open': {
      const lead = view.actions.includes('confirm') ? t.question : t.alreadyConfirmed
      const forms = view.actions.map((a) => form(a, a === 'confirm' ? t.confirm : t.cancel)).join('')
      return { heading: t.title, body: p(lead) + details(view.appointment, t) + forms }
    }
    case 'done': {
      const confirmed = view.action === 'confirm'
      return {
        heading: confirmed ? t.confirmed : t.cancelled,
        body: p(confirmed ? t.confirmedLead : t.cancelledLead) + details(view.appointment, t),
      }
    }
    case 'used':
      return { heading: t.used, body: p(t.usedFor[view.action]) + p(t.contact) }
    case 'expired':
      return { heading: t.expired, body: p(t.expiredLead) + p(t.contact) }
    case 'invalid':
      return { heading: t.invalid, body: p(t.invalidLead) + p(t.contact) }
    case 'not_found':
      return { heading: t.notFound, body: p(t.contact) }
    case 'closed': {
      const a = view.appointment
      const status = a ? p(`${t.status}: ${t.statuses[a.status] ?? a.status}`) + details(a, t) : ''
      return { heading: t.closed, body: status + p(t.contact) }
    }
    case 'unavailable':
    case 'error':
      return { heading: t.unavailable, body: p(t.unavailableLead) }
  }
}

const STYLE = [
  '*{box-sizing:border-box}',
  'html{-webkit-text-size-adjust:100%}',
  'body{margin:0;background:#f4f6f8;color:#1b1f24;font:1.0625rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}',
  'main{max-width:32rem;margin:0 auto;padding:1.5rem 1rem 2rem}',
  'h1{font-size:1.5rem;line-height:1.25;margin:0 0 .75rem;overflow-wrap:anywhere}',
  'p{margin:0 0 1rem;overflow-wrap:anywhere}',
  'dl{margin:0 0 1.25rem;padding:1rem;background:#fff;border:1px solid #d0d7de;border-radius:.5rem}',
  'dt{font-size:.875rem;color:#57606a}',
  'dd{margin:0 0 .75rem;font-weight:600;overflow-wrap:anywhere}',
  'dd:last-child{margin-bottom:0}',
  'small{font-weight:400;color:#57606a}',
  'form{margin:0 0 .75rem}',
  'button{display:block;width:100%;min-height:3rem;padding:.5rem 1rem;font:inherit;font-weight:600;border-radius:.5rem;border:2px solid #0b5cad;background:#0b5cad;color:#fff;cursor:pointer}',
  'button.cancel{background:#fff;color:#a40e26;border-color:#a40e26}',
].join('')

/** The whole page and its status code. */
export function renderLinkPage(view: PageView, lang: Lang): { status: number; html: string } {
  const t = TEXTS[lang]
  const { heading, body } = content(view, t)
  const html = renderPage({
    lang,
    title: heading,
    style: STYLE,
    body: `<main><h1>${esc(heading)}</h1>${body}</main>`,
  })
  return { status: PAGE_STATUS[view.kind], html }
}
