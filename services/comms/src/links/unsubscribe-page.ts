/**
 * The pages of the one-click unsubscribe link (`/p/u/<token>`): plain HTML, no script, no external
 * resource, in the link's language (es, en; anything else es). A bad link gets a page in both.
 * (links/page.ts renders the patient link's pages, whose views are appointments; it has no shell of
 * its own to share yet, so this file keeps a small one. Headers: routes/patient-links.ts PAGE_HEADERS.)
 */
export type PageLang = 'es' | 'en'
export const pageLang = (lang: unknown): PageLang => (lang === 'en' ? 'en' : 'es')

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

/** A whole page around `body` (already HTML; every text in this file is ours, none the request's). */
function layout(lang: PageLang | 'es-en', title: string, body: string): string {
  return `<!doctype html>
<html lang="${lang === 'es-en' ? 'es' : lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222;line-height:1.5}
h1{font-size:1.4rem}
button{font-size:1rem;padding:.6rem 1.2rem;border:0;border-radius:.3rem;background:#1f5fa8;color:#fff;cursor:pointer}
</style>
</head>
<body>
${body}
</body>
</html>
`
}

/** Before the click (GET): what the button does, and the button (a POST, the same as a mail client's). */
export function askPage(lang: PageLang): string {
  const t = TEXT[lang]
  return layout(
    lang,
    t.title,
    `<h1>${t.title}</h1>
<p>${t.ask}</p>
<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">${t.button}</button>
</form>`,
  )
}

export function donePage(lang: PageLang): string {
  const t = TEXT[lang]
  return layout(lang, t.doneTitle, `<h1>${t.doneTitle}</h1>\n<p>${t.done}</p>`)
}

export function notFoundPage(lang: PageLang): string {
  const t = TEXT[lang]
  return layout(lang, t.missingTitle, `<h1>${t.missingTitle}</h1>\n<p>${t.missing}</p>`)
}

/** An altered or malformed token: its language cannot be trusted, so both. */
export function invalidLinkPage(): string {
  return layout(
    'es-en',
    'Enlace no válido / Invalid link',
    `<h1>Enlace no válido</h1>
<p>Este enlace no es válido: cópielo entero del correo, o avise a su clínica.</p>
<h1 lang="en">Invalid link</h1>
<p lang="en">This link is not valid: copy it whole from the email, or tell your clinic.</p>`,
  )
}

/** The database or the service is away (503), or something failed on our side (500): try later. */
export function unavailablePage(): string {
  return layout(
    'es-en',
    'Inténtelo más tarde / Please try later',
    `<h1>Ahora no podemos atenderle</h1>
<p>Inténtelo de nuevo dentro de unos minutos con el mismo enlace.</p>
<h1 lang="en">We cannot take your request right now</h1>
<p lang="en">Please try again in a few minutes with the same link.</p>`,
  )
}
