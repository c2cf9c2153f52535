import { Readable } from 'node:stream'
import { isIsoInstant, isSafeText, unsafeTextErrors } from '@clinic/platform'

describe('unsafeTextErrors', () => {
  test('names every string with NUL or an unpaired surrogate, field names too, as JSON pointers', () => {
    const body = {
      first_name: 'A\u0000',
      ok: 'emoji 😀 fine',
      guardian: { name: '\ud800x' },
      tags: ['fine', 'b\udc00'],
      'a/b~c': '\u0000',
      ['k\u0000']: 1,
    }
    expect(unsafeTextErrors(body).map((e) => e.path)).toEqual([
      '/first_name',
      '/guardian/name',
      '/tags/1',
      '/a~1b~0c',
      '/k\ufffd',
    ])
    expect(unsafeTextErrors({ q: 'plain' })).toEqual([])
    // A parsed query string is an object of a prototype-less class.
    function Query() {}
    Query.prototype = Object.create(null)
    const query = Object.assign(new (Query as unknown as new () => object)(), { q: 'x\u0000' })
    expect(unsafeTextErrors(query).map((e) => e.path)).toEqual(['/q'])
  })

  test('walks parsed JSON only: a stream or a Buffer (a proxied body) is skipped, at once', () => {
    const stream = Readable.from(['\u0000'])
    const started = Date.now()
    expect(unsafeTextErrors(stream)).toEqual([])
    expect(unsafeTextErrors({ body: Buffer.from('\u0000') })).toEqual([])
    expect(Date.now() - started).toBeLessThan(1000)
  })

  test('a deep or huge value is walked within bounds', () => {
    let deep: unknown = '\u0000'
    for (let i = 0; i < 10_000; i++) deep = [deep]
    expect(unsafeTextErrors(deep)).toEqual([])
    expect(unsafeTextErrors(Array.from({ length: 1000 }, () => '\u0000'))).toHaveLength(20)
  })
})

test('isSafeText and isIsoInstant', () => {
  expect(isSafeText('😀')).toBe(true)
  expect(isSafeText('\ud83d')).toBe(false)
  expect(isIsoInstant('2026-11-22T09:30:00.000Z')).toBe(true)
  expect(isIsoInstant('2026-02-30T09:30:00.000Z')).toBe(false)
  expect(isIsoInstant('2026-11-22T09:30:00Z')).toBe(false)
  expect(isIsoInstant(5)).toBe(false)
})
