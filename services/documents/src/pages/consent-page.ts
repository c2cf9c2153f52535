import { FAILURE_STATUS, esc, renderPage, type FailurePage, type PageLanguage } from '@clinic/platform/http'
import type { ConsentPage } from '../domain/consent-links'
import type { ClinicNames } from '../domain/consent-store'
import { localTime } from '../render/consent-pdf'

/**
 * The consent link page (platform link kit: shell, headers, escaping, language): a plain form that
 * works without JavaScript, in Spanish or English. The template's text is shown exactly as written
 * (paragraphs kept, nothing interpreted). Every value from data goes through `esc`.
 */
type Lang = PageLanguage
export type PageView = ConsentPage | FailurePage

export const PAGE_STATUS: Record<PageView['kind'], number> = {
  ...FAILURE_STATUS,
  open: 200,
  done: 200,
  name_required: 422,
  not_found: 404,
  expired: 410,
  used: 410,
}

const TEXTS = {
  es: {
    consent: 'Consentimiento informado',
    behalfGuardian: (patient: string) => `Usted firma como representante legal de ${patient}.`,
    behalfPatient: (patient: string) => `Usted firma en su propio nombre (${patient}).`,
    name: 'Su nombre completo',
    nameRequired: 'Escriba su nombre completo para aceptar.',
    accept: 'Acepto',
    decline: 'No acepto',
    granted: 'Gracias: su consentimiento ha quedado registrado',
    refused: 'Su respuesta ha quedado registrada: no acepta',
    doneLead: 'La clínica conserva el texto y su respuesta. Puede cerrar esta página.',
    locale: 'es-ES',
    theClinic: 'La clínica',
    asks: (clinic: string) => `${clinic} le pide su consentimiento informado.`,
    answered: (o: Answered) =>
      `${o.signer ? `${o.signer} respondió` : 'Se respondió'} «${o.answer}» a «${o.title}» ${
        o.guardian ? `como representante legal de ${o.patient}` : `en nombre propio (${o.patient})`
      }, el ${o.at}.`,
    pdf: 'Descargar el documento firmado (PDF)',
    pdfLead: 'El enlace funciona durante 24 horas; después, pídalo a la clínica.',
    used: 'Este enlace ya se ha usado',
    usedLead: 'Este consentimiento ya se respondió o ya no está pendiente.',
    expired: 'Este enlace ha caducado',
    expiredLead: 'Pida a la clínica un enlace nuevo.',
    invalid: 'Este enlace no es válido',
    invalidLead: 'Compruebe que lo ha abierto completo, tal como le llegó.',
    notFound: 'No encontramos este consentimiento',
    unavailable: 'Ahora no podemos atenderle',
    unavailableLead: 'Inténtelo de nuevo dentro de unos minutos con el mismo enlace.',
    contact: 'Si tiene dudas, contacte con la clínica antes de responder.',
  },
  en: {
    consent: 'Informed consent',
    behalfGuardian: (patient: string) => `You sign as the legal representative of ${patient}.`,
    behalfPatient: (patient: string) => `You sign on your own behalf (${patient}).`,
    name: 'Your full name',
    nameRequired: 'Type your full name to accept.',
    accept: 'I accept',
    decline: 'I do not accept',
    granted: 'Thank you: your consent has been recorded',
    refused: 'Your answer has been recorded: you do not accept',
    doneLead: 'The clinic keeps the text and your answer. You may close this page.',
    locale: 'en-GB',
    theClinic: 'The clinic',
    asks: (clinic: string) => `${clinic} asks for your informed consent.`,
    answered: (o: Answered) =>
      `${o.signer ? `${o.signer} answered` : 'Answered'} “${o.answer}” to “${o.title}” ${
        o.guardian ? `as the legal representative of ${o.patient}` : `on their own behalf (${o.patient})`
      }, on ${o.at}.`,
    pdf: 'Download the signed document (PDF)',
    pdfLead: 'The link works for 24 hours; after that, ask the clinic for it.',
    used: 'This link has already been used',
    usedLead: 'This consent has been answered already, or is no longer pending.',
    expired: 'This link has expired',
    expiredLead: 'Ask the clinic for a new link.',
    invalid: 'This link is not valid',
    invalidLead: 'Check that you opened it whole, as you received it.',
    notFound: 'We cannot find this consent',
    unavailable: 'We cannot answer right now',
    unavailableLead: 'Try again in a few minutes with the same link.',
    contact: 'If you have questions, contact the clinic before answering.',
  },
}

/** What the page after an answer says was answered. */
interface Answered {
  signer: string
  answer: string
  title: string
  guardian: boolean
  patient: string
  at: string
}

/** The clinic as a person reads it: the company, and its center when the consent has one. */
export const clinicLabel = (clinic: ClinicNames, fallback: string) =>
  clinic.name ? (clinic.center ? `${clinic.name} (${clinic.center})` : clinic.name) : fallback

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;padding:1rem;line-height:1.5;color:#1a1a1a;max-width:40rem}
h1{font-size:1.3rem}.text{white-space:pre-wrap;border:1px solid #ccc;padding:.75rem;border-radius:.4rem;background:#fafafa}
label{display:block;margin-top:1rem;font-weight:600}input[type=text]{width:100%;font-size:1.1rem;padding:.5rem;box-sizing:border-box}
button{font-size:1.1rem;padding:.7rem 1rem;margin:.5rem .5rem 0 0;border-radius:.4rem;border:1px solid #555}
.accept{background:#0b6e4f;color:#fff}.note{color:#a00}`

const shell = (lang: Lang, title: string, body: string) => renderPage({ lang, title, style: STYLE, body })

export function renderConsentPage(view: PageView, lang: Lang): { status: number; html: string } {
  const t = TEXTS[lang]
  const status = PAGE_STATUS[view.kind]
  const message = (title: string, lead = '') =>
    shell(lang, title, `<h1>${esc(title)}</h1>${lead ? `<p>${esc(lead)}</p>` : ''}<p>${esc(t.contact)}</p>`)
  switch (view.kind) {
    case 'open':
    case 'name_required': {
      const behalf =
        view.signerRole === 'guardian'
          ? t.behalfGuardian(view.patientName)
          : t.behalfPatient(view.patientName)
      const clinic = clinicLabel(view.clinic, t.theClinic)
      const body = `<p id="clinic"><strong>${esc(clinic)}</strong></p><p>${esc(t.asks(clinic))}</p><p>${esc(t.consent)}</p><h1>${esc(view.template.title)}</h1>
<div class="text" id="consent-text">${esc(view.template.body)}</div>
<p id="behalf">${esc(behalf)}</p>
<form method="post">
${view.kind === 'name_required' ? `<p class="note" role="alert">${esc(t.nameRequired)}</p>` : ''}
<label for="name">${esc(t.name)}</label>
<input type="text" id="name" name="name" autocomplete="name" maxlength="200" value="">
<button type="submit" name="answer" value="accept" class="accept">${esc(t.accept)}</button>
<button type="submit" name="answer" value="decline">${esc(t.decline)}</button>
</form><p>${esc(t.contact)}</p>`
      return { status, html: shell(lang, view.template.title, body) }
    }
    case 'done': {
      const clinic = clinicLabel(view.clinic, t.theClinic)
      const answered = t.answered({
        signer: view.signerName,
        answer: view.status === 'granted' ? t.accept : t.decline,
        title: view.title,
        guardian: view.signerRole === 'guardian',
        patient: view.patientName,
        at: localTime(view.answeredAt, t.locale, view.clinic.timeZone),
      })
      const pdf = view.pdfUrl
        ? `<p><a id="pdf" href="${esc(view.pdfUrl)}" download>${esc(t.pdf)}</a></p><p>${esc(t.pdfLead)}</p>`
        : ''
      const title = view.status === 'granted' ? t.granted : t.refused
      const body = `<p id="clinic"><strong>${esc(clinic)}</strong></p><h1>${esc(title)}</h1><p id="answered">${esc(answered)}</p>${pdf}<p>${esc(t.doneLead)}</p>`
      return { status, html: shell(lang, title, body) }
    }
    case 'used':
      return { status, html: message(t.used, t.usedLead) }
    case 'expired':
      return { status, html: message(t.expired, t.expiredLead) }
    case 'not_found':
      return { status, html: message(t.notFound) }
    case 'unavailable':
    case 'error':
      return { status, html: message(t.unavailable, t.unavailableLead) }
    default:
      return { status, html: message(t.invalid, t.invalidLead) }
  }
}
