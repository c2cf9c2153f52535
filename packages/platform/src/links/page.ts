import escapeHtml from 'escape-html'

/**
 * Text for HTML content and attribute values (`escape-html`: & < > " '). Every value of a page that
 * comes from data goes through it; the page's own markup does not.
 */
export const esc = (value: unknown): string => escapeHtml(String(value))

export interface PageShell {
  /** The page's language (`<html lang>`). */
  lang: string
  /** The title, as text (escaped here). */
  title: string
  /** The page's own CSS: inline only (the Content-Security-Policy allows no other). */
  style: string
  /** The body, as HTML: its data already escaped with `esc`. */
  body: string
}

/**
 * A whole page for people, opened from a message: small, server-rendered, no script, inline CSS
 * only, readable on a phone, kept out of search engines. Sent with PAGE_HEADERS (http/link-pages.ts).
 */
export const renderPage = (p: PageShell): string =>
  `<!doctype html><html lang="${esc(p.lang)}"><head><meta charset="utf-8">` +
  '<meta name="viewport" content="width=device-width, initial-scale=1">' +
  '<meta name="robots" content="noindex, nofollow">' +
  `<title>${esc(p.title)}</title><style>${p.style}</style></head>` +
  `<body>${p.body}</body></html>\n`
