/**
 * Control characters (C0, DEL, C1), every bidirectional control (Unicode's Bidi_Control: the marks
 * LRM, RLM and the Arabic letter mark, the embeddings, overrides and isolates) and the line and
 * paragraph separators.
 */
const UNSAFE = /[\p{Cc}\p{Bidi_Control}\u2028\u2029]/gu

/**
 * The client's file name as kept (DESIGN.md section 15): its last path segment, without control
 * characters, at most 255 characters; `upload` plus the type's extension when nothing is left.
 */
export function cleanFilename(raw: string | undefined, extension: string): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? ''
  const clean = base.replace(UNSAFE, '').trim()
  const named = clean && clean !== '.' && clean !== '..' ? clean : `upload.${extension}`
  return [...named].slice(0, 255).join('')
}

/** Other spellings of an accepted type's extension: kept as the client wrote them. */
const SAME_TYPE: Readonly<Record<string, readonly string[]>> = {
  jpg: ['jpg', 'jpeg', 'jpe'],
  tif: ['tif', 'tiff'],
  heic: ['heic', 'heif'],
  dcm: ['dcm', 'dicom'],
}
/** What reads as a file name's extension: a dot and up to 8 letters or digits, a letter first. */
const EXTENSION = /\.([A-Za-z][A-Za-z0-9]{0,7})$/

/**
 * The name a download is saved under (DESIGN.md section 15): the kept name with the extension of
 * the type its bytes show, always, so a file saved from the clinic opens as what it is (HTML with
 * `DICM` at byte 128 is stored as DICOM and saved as `.dcm`, never `.html`). The name's own
 * extension is kept when it already names that type (any spelling or case), replaced when it names
 * anything else, and `extension` is appended when the name has none (`informe 12.5` has none: an
 * extension starts with a letter).
 */
export function downloadName(filename: string, extension: string): string {
  const own = EXTENSION.exec(filename)
  const spellings = SAME_TYPE[extension] ?? [extension]
  if (own && spellings.includes(own[1]!.toLowerCase())) return filename
  const stem = own && own.index > 0 ? filename.slice(0, own.index) : filename
  return `${stem}.${extension}`
}

/**
 * `Content-Disposition` of a download: always an attachment, the name in RFC 8187 `filename*`
 * (percent-encoded UTF-8) and an ASCII fallback with anything unsafe replaced.
 */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_')
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}
