import { esc, renderPage } from '@clinic/platform/http'
import { localTime } from '../domain/local-time'

/**
 * What the patient link pages share (/p/a an appointment, /p/w a waitlist offer), in the platform
 * link kit's shell: their style, a slot's details and the answer forms. Every value that comes
 * from data goes through `esc`.
 */

/** A slot as the pages show it: when (in its own time zone), where and with whom. */
export interface Slot {
  starts_at: string
  time_zone: string
  codalmacen: string
  practitioner: string
}

/** The labels of a slot's details, and the locale its date and time are written in. */
export interface SlotLabels {
  locale: string
  date: string
  time: string
  center: string
  practitioner: string
}

const row = (label: string, value: string) => `<dt>${esc(label)}</dt><dd>${value}</dd>`

/** Date, time (with its zone), center and practitioner; then `more` rows (label, HTML value). */
export function slotDetails(s: Slot, t: SlotLabels, more: Array<[string, string]> = []): string {
  const w = localTime(s.starts_at, s.time_zone, t.locale)
  return `<dl>${[
    row(t.date, esc(w.date)),
    row(t.time, `${esc(w.time)} <small>(${esc(w.zone)})</small>`),
    row(t.center, esc(s.codalmacen)),
    row(t.practitioner, esc(s.practitioner)),
    ...more.map(([label, value]) => row(label, value)),
  ].join('')}</dl>`
}

/** A form that posts `action` back to the page's own URL: a button, no script needed. */
export const actionForm = (action: string, label: string) =>
  `<form method="post"><input type="hidden" name="action" value="${esc(action)}">` +
  `<button type="submit" class="${esc(action)}">${esc(label)}</button></form>`

export const para = (text: string) => `<p>${esc(text)}</p>`

/** Readable at a phone's width (390 px), no horizontal scrolling; the second button is outlined. */
export const PAGE_STYLE = [
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
  'button.cancel,button.decline{background:#fff;color:#a40e26;border-color:#a40e26}',
].join('')

/** The whole page: the heading (also its title) over the body, in the kit's shell and style. */
export const linkPageHtml = (lang: string, heading: string, body: string): string =>
  renderPage({
    lang,
    title: heading,
    style: PAGE_STYLE,
    body: `<main><h1>${esc(heading)}</h1>${body}</main>`,
  })
