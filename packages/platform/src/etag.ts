/** Our strong ETag: the row version, quoted. */
export const etagOf = (version: number) => `"${version}"`

/**
 * If-Match (RFC 9110 section 13.1.1) against `etagOf(version)`: `*` matches any existing
 * resource, a list matches if one entry does; a weak `W/"N"` is accepted as `"N"` since clients
 * and proxies often weaken ETags. Anything unparsable matches nothing (412).
 */
export function ifMatchAllows(header: string, version: number): boolean {
  const value = header.trim()
  if (value === '*') return true
  return value.split(',').some((entry) => {
    const m = /^(?:W\/)?"(\d{1,10})"$/.exec(entry.trim())
    return !!m && Number(m[1]) === version
  })
}
