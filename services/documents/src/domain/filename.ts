/**
 * The client's file name as kept (DESIGN.md section 15): its last path segment, without control
 * characters, at most 255 characters; `upload` plus the type's extension when nothing is left.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g

export function cleanFilename(raw: string | undefined, extension: string): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? ''
  // Control characters (C0, DEL, C1), bidirectional overrides and line separators.
  const clean = base.replace(UNSAFE, '').trim()
  const named = clean && clean !== '.' && clean !== '..' ? clean : `upload.${extension}`
  return [...named].slice(0, 255).join('')
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
