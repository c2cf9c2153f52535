import { renderPage, type FailurePage, type PageLanguage } from '@clinic/platform/http'

/**
 * The pages of the one-click unsubscribe link (`/p/u/<token>`, platform link kit: shell, headers,
 * language), in es or en. A bad link, or the service away, gets a page in both: its language cannot
 * be trusted. Every text here is ours, none the request's.
 */

/** Before the click (GET), after it (POST), or no such message in the link's company. */
export type UnsubscribePage = { kind: 'ask' } | { kind: 'done' } | { kind: 'not_found' }

const TEXT = {
  es: {
    title: 'Darse de baja',
    ask: '¿Quiere dejar de recibir correos de la clínica en esta dirección?',
    button: 'Darme de baja',
    doneTitle: 'Baja confirmada',
    done: 'No recibirá más correos de la clínica en esta dirección. Si fue un error, avise a su clínica.',
    missingTitle: 'Enlace no encontrado',
    missing: 'No encontramos el mensaje de este enlace. Si quiere darse de baja, avise a su clínica.',
  },
  en: {
    title: 'Unsubscribe',
    ask: 'Do you want to stop receiving emails from the clinic at this address?',
    button: 'Unsubscribe',
    doneTitle: 'You are unsubscribed',
    done: 'You will receive no more emails from the clinic at this address. If this was a mistake, tell your clinic.',
    missingTitle: 'Link not found',
    missing: 'We could not find the message of this link. To unsubscribe, tell your clinic.',
  },
} as const

const STYLE = [
  'body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222;line-height:1.5}',
  'h1{font-size:1.4rem}',
  'button{font-size:1rem;padding:.6rem 1.2rem;border:0;border-radius:.3rem;background:#1f5fa8;color:#fff;cursor:pointer}',
].join('')

const BOTH = {
  invalid: {
    status: 400,
    title: 'Enlace no válido / Invalid link',
    body:
      '<h1>Enlace no válido</h1><p>Este enlace no es válido: cópielo entero del correo, o avise a su clínica.</p>' +
      '<h1 lang="en">Invalid link</h1><p lang="en">This link is not valid: copy it whole from the email, or tell your clinic.</p>',
  },
  unavailable: {
    status: 503,
    title: 'Inténtelo más tarde / Please try later',
    body:
      '<h1>Ahora no podemos atenderle</h1><p>Inténtelo de nuevo dentro de unos minutos con el mismo enlace.</p>' +
      '<h1 lang="en">We cannot take your request right now</h1><p lang="en">Please try again in a few minutes with the same link.</p>',
  },
}

/** A page and its status code: the button is a POST, the same as a mail client's one click. */
export function renderUnsubscribePage(
  view: UnsubscribePage | FailurePage,
  lang: PageLanguage,
): { status: number; html: string } {
  const page = (status: number, l: string, title: string, body: string) => ({
    status,
    html: renderPage({ lang: l, title, style: STYLE, body }),
  })
  const t = TEXT[lang]
  switch (view.kind) {
    case 'ask':
      return page(
        200,
        lang,
        t.title,
        `<h1>${t.title}</h1><p>${t.ask}</p><form method="post">` +
          '<input type="hidden" name="List-Unsubscribe" value="One-Click">' +
          `<button type="submit">${t.button}</button></form>`,
      )
    case 'done':
      return page(200, lang, t.doneTitle, `<h1>${t.doneTitle}</h1><p>${t.done}</p>`)
    case 'not_found':
      return page(404, lang, t.missingTitle, `<h1>${t.missingTitle}</h1><p>${t.missing}</p>`)
    case 'invalid':
      return page(BOTH.invalid.status, 'es', BOTH.invalid.title, BOTH.invalid.body)
    case 'unavailable':
      return page(BOTH.unavailable.status, 'es', BOTH.unavailable.title, BOTH.unavailable.body)
    case 'error':
      return page(500, 'es', BOTH.unavailable.title, BOTH.unavailable.body)
  }
}
