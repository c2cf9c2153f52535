/**
 * The type of a file decided from its first bytes (DESIGN.md section 15), never from the client's
 * Content-Type or name. A library of magic numbers reads them (MagicNumbers: `file-type`); DICOM,
 * which it does not always know from the preamble, is `DICM` at byte 128.
 */

/** Bytes to read before deciding: file-type looks at most this far; DICOM's magic ends at 132. */
export const SNIFF_BYTES = 4100

/** The detected types a document may have, each with the extension its download is named with. */
export const ACCEPTED: Readonly<Record<string, string>> = {
  'application/pdf': 'pdf',
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/tiff': 'tif',
  'image/webp': 'webp',
  'image/heic': 'heic',
  'image/heif': 'heic',
  'application/dicom': 'dcm',
}

export type Detection = { accepted: true; contentType: string } | { accepted: false; found: string }

/**
 * The port to a library of magic numbers (adapters/file-type.ts, `file-type`): the MIME type it
 * recognises in a file's first bytes, or undefined.
 */
export type MagicNumbers = (head: Uint8Array) => Promise<string | undefined>

const isDicom = (head: Buffer) => head.length >= 132 && head.toString('latin1', 128, 132) === 'DICM'

/** A UTF-8 byte order mark, as latin1 text: no part of the markup after it. */
const UTF8_BOM = '\xef\xbb\xbf'

/**
 * What text-like bytes are, for the 415's `found`: file-type knows binary formats, and of markup
 * only that it is XML (`xml`: it said so), so an SVG or XHTML behind an XML declaration is named
 * here from its first 512 characters.
 */
function textKind(head: Buffer, xml: boolean): string {
  const latin1 = head.toString('latin1')
  const text = (latin1.startsWith(UTF8_BOM) ? latin1.slice(3) : latin1)
    .trimStart()
    .slice(0, 512)
    .toLowerCase()
  if (text.startsWith('<?xml') && text.includes('<svg')) return 'image/svg+xml'
  if (text.startsWith('<svg')) return 'image/svg+xml'
  if (/^<(!doctype html|html|head|body|script|iframe|div|p\b|a\b)/.test(text) || text.includes('<html'))
    return 'text/html'
  if (xml || text.startsWith('<?xml')) return 'application/xml'
  // Mostly printable: plain text; else bytes nobody recognises.
  const sample = head.subarray(0, 512)
  let printable = 0
  for (const b of sample) if (b === 9 || b === 10 || b === 13 || (b >= 32 && b < 127) || b >= 128) printable++
  return sample.length && printable / sample.length > 0.95 ? 'text/plain' : 'unrecognised binary data'
}

/** The file's type from its first SNIFF_BYTES bytes (all of it when shorter). */
export async function detectType(head: Buffer, magic: MagicNumbers): Promise<Detection> {
  if (!head.length) return { accepted: false, found: 'an empty file' }
  if (isDicom(head)) return { accepted: true, contentType: 'application/dicom' }
  const found = await magic(head)
  if (found && ACCEPTED[found]) return { accepted: true, contentType: found }
  const xml = found === 'application/xml'
  return { accepted: false, found: found && !xml ? found : textKind(head, xml) }
}
