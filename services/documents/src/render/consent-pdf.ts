import { readFileSync } from 'node:fs'
import fontkit from '@pdf-lib/fontkit'
import { PDFDocument, type PDFFont, type PDFPage } from 'pdf-lib'
import type { ConsentRecord } from '../domain/consent-pdf-renderer'
import { labelsFor, type ConsentLabels } from './consent-labels'

/**
 * The clinic's proof of a granted consent (DESIGN.md section 16): the text exactly as signed and
 * its evidence, as a PDF (`pdf-lib`) readable years later without this system.
 *
 * - The text is drawn in DejaVu Sans (npm `dejavu-fonts-ttf`, the DejaVu 2.37 TrueType files;
 *   Bitstream Vera licence, which allows embedding), subset and embedded through `@pdf-lib/fontkit`:
 *   every character of the languages we serve (ñ, á, ü, ç, «», €, ≥, Greek, Cyrillic...) is drawn as
 *   itself, and the font's ToUnicode map gives readers (pdftotext, pdf.js) the same characters back.
 *   Ligatures are off, so "fi" stays two characters. A character the font lacks is drawn as its
 *   missing-glyph box, never replaced by another one.
 * - Source lines stay lines (each `\n`, `\r\n`, `\r`, U+2028 or U+2029 of the text starts a new one;
 *   an empty line is an empty line), so paragraphs are kept. A line longer than the page wraps at a
 *   space (inside a word only as the next point says): the break stands for the run of spaces it
 *   replaces. Spaces are text as signed (the page shows the text with `white-space: pre-wrap`): a
 *   run of them inside a line is drawn as it is (two spaces look like two), never collapsed, and so
 *   are a line's trailing spaces and its leading ones, unless its first word fits the line only
 *   without them (the word then starts the line, as after a break); a tab is drawn as four spaces.
 *   Readers extracting text collapse space runs themselves: the exact text is also attached to the
 *   PDF (`consent-text.txt`, UTF-8), and its SHA-256 is the `text_sha256` printed.
 * - A word wider than a line is never cut silently: it gets a line of its own, drawn smaller until it
 *   fits (down to MIN_SIZE); a word too long even then is split, and each piece but the last ends with
 *   the visible mark `↵` (CONTINUED), which is not part of the text.
 * - Lines past the bottom margin go on a new page; every page says which consent it belongs to.
 * - The clinic (company and center) is named at the top; times are written in the center's time zone
 *   and in UTC; labels are in the consent's language (labelsFor).
 */

const A4 = { width: 595.28, height: 841.89 }
const MARGIN = 56
const SIZE = 10.5
const LEADING = 14
/** The smallest size a long word is shrunk to before it is split (still readable when zoomed). */
export const MIN_SIZE = 6
/** Ends each piece of a word split across lines; it is the layout's, not the text's. */
export const CONTINUED = '↵'
/** The line breaks of a text as signed. */
const LINE_BREAK = /\r\n|\r|\n|\u2028|\u2029/

let fontBytes: { regular: Buffer; bold: Buffer } | undefined
/** The font files, read once (they ship in the npm package, so the image carries them). */
function fonts() {
  fontBytes ??= {
    regular: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')),
    bold: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf')),
  }
  return fontBytes
}

/** A line as laid out: its text and the size it is drawn at. */
export interface Line {
  text: string
  size: number
}

/** What measures text (a PDFFont; tests may pass another). */
export type Measure = Pick<PDFFont, 'widthOfTextAtSize'>

/**
 * `text` laid out in lines at most `width` wide (see the module comment): source lines kept, wraps
 * only at spaces, long words on a line of their own, smaller, or split with CONTINUED.
 */
export function layout(font: Measure, text: string, width: number, size = SIZE): Line[] {
  const lines: Line[] = []
  const fits = (s: string) => font.widthOfTextAtSize(s, size) <= width
  for (const source of text.split(LINE_BREAK)) {
    let line = ''
    /** Spaces after the last word placed: drawn before the next word, or replaced by a break. */
    let spaces = ''
    /** No word placed yet on this source line. */
    let first = true
    let pushed = false
    const push = (...more: Line[]) => {
      lines.push(...more)
      pushed = true
    }
    for (const token of source.replace(/\t/g, '    ').match(/ +|[^ ]+/g) ?? []) {
      if (token.startsWith(' ')) {
        spaces += token
        continue
      }
      // Leading spaces of a source line are text (drawn if the word fits after them); after a break,
      // the break stood for them.
      const lead = line || first ? spaces : ''
      if (fits(line + lead + token)) {
        line += lead + token
      } else {
        // The break replaces the spaces before this word.
        if (line) push({ text: line, size })
        line = ''
        if (fits(token)) line = token
        else push(...longWord(font, token, width, size))
      }
      spaces = ''
      first = false
    }
    // Trailing spaces are drawn (invisible, but the text as signed); a line of spaces alone too.
    if (line || !pushed) push({ text: line + spaces, size })
  }
  return lines
}

/** A word wider than a line: on its own line, smaller; split with CONTINUED if even MIN_SIZE is too big. */
function longWord(font: Measure, word: string, width: number, size: number): Line[] {
  const fitsAt = (s: string, at: number) => font.widthOfTextAtSize(s, at) <= width
  const shrunk = Math.floor((size * width) / font.widthOfTextAtSize(word, size) / 0.25) * 0.25
  if (shrunk >= MIN_SIZE && fitsAt(word, shrunk)) return [{ text: word, size: shrunk }]
  const pieces: Line[] = []
  let piece = ''
  for (const char of word) {
    if (piece && !fitsAt(piece + char + CONTINUED, MIN_SIZE)) {
      pieces.push({ text: piece + CONTINUED, size: MIN_SIZE })
      piece = ''
    }
    piece += char
  }
  pieces.push({ text: piece, size: MIN_SIZE })
  return pieces
}

export type { ConsentRecord }

/** An instant as people there read it, with its zone's name. */
export function localTime(iso: string, locale: string, timeZone: string): string {
  const local = new Intl.DateTimeFormat(locale, { timeZone, dateStyle: 'long', timeStyle: 'long' })
  return `${local.format(new Date(iso))} (${timeZone})`
}

/** The evidence lines of the PDF, in the consent's language. */
export function evidenceLines(r: ConsentRecord, t: ConsentLabels): string[] {
  const e = r.evidence
  const onFile = e.signer_name_on_file ?? null
  return [
    `${t.consentId}: ${r.consent.id}`,
    `${t.patient}: ${r.patientName} (${r.consent.patient_id})`,
    `${t.signer}: ${e.signer_name} (${e.signer_role === 'guardian' ? t.guardianOf(r.patientName) : t.self})`,
    `${t.nameOnFile}: ${onFile ?? t.none}${
      onFile === null ? '' : ` (${e.signer_name_matches ? t.matches : t.differs})`
    }`,
    `${t.answer}: ${e.answer === 'accept' ? t.accepted : t.declined}`,
    `${t.signedAt}: ${localTime(e.signed_at, t.locale, r.clinic.timeZone)}`,
    `UTC: ${e.signed_at}`,
    `${t.method}: ${e.method === 'in_person' ? t.inPerson : t.patientLink}`,
    ...(e.witness ? [`${t.witness}: ${e.witness}`] : []),
    `${t.ip}: ${e.ip ?? '-'}`,
    `${t.userAgent}: ${e.user_agent ?? '-'}`,
    `${t.textSha}: ${e.text_sha256}`,
    t.attached,
  ]
}

export async function renderConsentPdf(r: ConsentRecord): Promise<Buffer> {
  const t = labelsFor(r.consent.language)
  const pdf = await PDFDocument.create()
  pdf.registerFontkit(fontkit)
  pdf.setTitle(r.template.title)
  pdf.setSubject(`consent ${r.consent.id}`)
  pdf.setLanguage(r.consent.language)
  pdf.setProducer('clinic documents')
  pdf.setCreationDate(new Date(r.evidence.signed_at))
  pdf.setModificationDate(new Date(r.evidence.signed_at))
  const features = { liga: false, clig: false, dlig: false }
  const regular = await pdf.embedFont(fonts().regular, { subset: true, features })
  const bold = await pdf.embedFont(fonts().bold, { subset: true, features })
  // The exact text, byte for byte: what the printed text_sha256 is the hash of.
  await pdf.attach(Buffer.from(r.template.body, 'utf8'), 'consent-text.txt', {
    mimeType: 'text/plain; charset=utf-8',
    description: `${t.textSha} ${r.evidence.text_sha256}`,
    creationDate: new Date(r.evidence.signed_at),
    modificationDate: new Date(r.evidence.signed_at),
  })

  const width = A4.width - 2 * MARGIN
  let page: PDFPage
  let y = 0
  const footer = `${t.consentId} ${r.consent.id}`
  const newPage = () => {
    page = pdf.addPage([A4.width, A4.height])
    page.drawText(footer, { x: MARGIN, y: MARGIN / 2, size: 7, font: regular })
    y = A4.height - MARGIN
  }
  newPage()
  const write = (text: string, font = regular, size = SIZE) => {
    for (const line of layout(font, text, width, size)) {
      if (y < MARGIN) newPage()
      if (line.text) page.drawText(line.text, { x: MARGIN, y, size: line.size, font })
      y -= LEADING * Math.max(1, size / SIZE)
    }
  }
  const gap = (lines = 0.5) => {
    y -= LEADING * lines
  }

  write(r.clinic.name ?? t.clinic, bold, 12)
  if (r.clinic.center) write(r.clinic.center)
  gap()
  write(r.template.title, bold, 14)
  write(`${t.template} ${r.template.key} v${r.template.version} (${r.template.language})`)
  gap()
  write(r.template.body)
  gap()
  write(t.evidence, bold, 12)
  for (const line of evidenceLines(r, t)) write(line)
  return Buffer.from(await pdf.save({ useObjectStreams: false }))
}
