import { PDFDocument, StandardFonts, type PDFFont } from 'pdf-lib'
import type { Consent, ConsentTemplate, Evidence } from '../schemas/consent'

/**
 * The clinic's proof of a granted consent (DESIGN.md section 16): the exact text as signed and its
 * evidence, as a PDF (`pdf-lib`) readable years later without this system. Standard fonts only
 * (WinAnsi: Spanish and English text); a character they cannot draw is written as `?`, never
 * dropped silently, and the text hash printed is the one of the text as stored.
 */

const A4 = { width: 595.28, height: 841.89 }
const MARGIN = 56
const SIZE = 10.5
const LEADING = 14

/** What WinAnsi (the standard fonts' encoding) can draw; anything else becomes '?'. */
const drawable = (font: PDFFont, text: string) =>
  [...text]
    .map((c) => {
      try {
        font.encodeText(c)
        return c
      } catch {
        return '?'
      }
    })
    .join('')

/** `text` broken into lines that fit `width` (words kept whole unless one alone is too wide). */
function wrap(font: PDFFont, text: string, width: number, size: number): string[] {
  const lines: string[] = []
  for (const paragraph of text.split(/\r?\n/)) {
    let line = ''
    for (const word of paragraph.split(/ +/)) {
      const next = line ? `${line} ${word}` : word
      if (font.widthOfTextAtSize(next, size) <= width || !line) line = next
      else {
        lines.push(line)
        line = word
      }
    }
    lines.push(line)
  }
  return lines
}

export interface ConsentRecord {
  consent: Consent
  template: ConsentTemplate
  evidence: Evidence
  /** Whose behalf the signer acted on (the patient's name). */
  patientName: string
}

export async function renderConsentPdf(r: ConsentRecord): Promise<Buffer> {
  const pdf = await PDFDocument.create()
  pdf.setTitle(r.template.title)
  pdf.setSubject(`consent ${r.consent.id}`)
  pdf.setProducer('clinic documents')
  pdf.setCreationDate(new Date(r.evidence.signed_at))
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  let page = pdf.addPage([A4.width, A4.height])
  let y = A4.height - MARGIN
  const width = A4.width - 2 * MARGIN
  const write = (text: string, font = regular, size = SIZE) => {
    for (const line of wrap(font, drawable(font, text), width, size)) {
      if (y < MARGIN) {
        page = pdf.addPage([A4.width, A4.height])
        y = A4.height - MARGIN
      }
      page.drawText(line, { x: MARGIN, y, size, font })
      y -= LEADING
    }
  }
  write(r.template.title, bold, 14)
  y -= LEADING / 2
  write(`Template ${r.template.key} v${r.template.version} (${r.template.language})`)
  y -= LEADING / 2
  write(r.template.body)
  y -= LEADING
  const e = r.evidence
  write('Evidence', bold, 12)
  for (const line of [
    `Consent: ${r.consent.id}`,
    `Patient: ${r.patientName} (${r.consent.patient_id})`,
    `Signer: ${e.signer_name} (${e.signer_role}${e.signer_role === 'guardian' ? `, on behalf of ${r.patientName}` : ''})`,
    `Answer: ${e.answer}`,
    `Signed at: ${e.signed_at}`,
    `Method: ${e.method}`,
    ...(e.witness ? [`Witness: ${e.witness}`] : []),
    `IP: ${e.ip ?? '-'}`,
    `User agent: ${e.user_agent ?? '-'}`,
    `Text SHA-256: ${e.text_sha256}`,
  ])
    write(line)
  return Buffer.from(await pdf.save({ useObjectStreams: false }))
}
