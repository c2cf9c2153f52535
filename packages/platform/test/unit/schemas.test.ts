import {
  ValidationFailed,
  decodeCursor,
  encodeCursor,
  etagOf,
  ifMatchAllows,
  nullable,
  pageOf,
} from '@clinic/platform'
import { Type } from '@sinclair/typebox'

function thrown(fn: () => unknown): ValidationFailed {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationFailed)
    return err as ValidationFailed
  }
  throw new Error('expected ValidationFailed')
}

describe('list cursors', () => {
  it('round-trips the sort values of a row', () => {
    const values = ['Garcia', '2026-11-22T09:30:00.000Z', '0190c5a0-0000-7000-8000-000000000001', 42, null]
    const cursor = encodeCursor(values)
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/) // safe in a query string as is
    expect(decodeCursor(cursor, values.length)).toEqual(values)
  })

  it.each([
    ['garbage', '!!!not-a-cursor'],
    ['base64 of non-JSON', Buffer.from('{oops').toString('base64url')],
    ['base64 of an object', Buffer.from('{"a":1}').toString('base64url')],
    ['empty', ''],
  ])('refuses %s with validation_failed on /after', (_what, cursor) => {
    const err = thrown(() => decodeCursor(cursor, 2))
    expect(err.status).toBe(400)
    expect(err.code).toBe('validation_failed')
    expect(err.errors).toEqual([{ path: '/after', message: 'is not a cursor from meta.next' }])
  })

  it('refuses a cursor of another sort (other length)', () => {
    expect(thrown(() => decodeCursor(encodeCursor(['a', 'b', 'c']), 2)).code).toBe('validation_failed')
  })
})

describe('pageOf', () => {
  const cursorOf = (n: number) => `c${n}`
  it('drops the extra row and makes the cursor from the last row shown', () => {
    expect(pageOf([1, 2, 3], { total: 9, offset: 0, limit: 2, cursorOf })).toEqual({
      data: [1, 2],
      meta: { total: 9, offset: 0, limit: 2, next: 'c2' },
    })
  })
  it('has no next page when the store found no extra row', () => {
    expect(pageOf([1, 2], { total: 2, offset: 0, limit: 2, cursorOf }).meta.next).toBeNull()
  })
})

describe('ETag and If-Match', () => {
  test('strong quoted version', () => {
    expect(etagOf(3)).toBe('"3"')
  })
  test.each([
    ['"3"', true],
    ['W/"3"', true],
    ['*', true],
    [' "1", "3" ', true],
    ['"1", W/"3"', true],
    ['"2"', false],
    ['3', false],
    ['"03x"', false],
    ['', false],
    ['W/3', false],
  ])('If-Match %j against version 3 -> %s', (header, ok) => {
    expect(ifMatchAllows(header, 3)).toBe(ok)
  })
})

describe('nullable', () => {
  it('adds null to the type, and to the enum of enums', () => {
    expect(nullable(Type.String({ maxLength: 3 }))).toMatchObject({ type: ['string', 'null'], maxLength: 3 })
    expect(nullable(Type.Unsafe<'a' | 'b'>({ type: 'string', enum: ['a', 'b'] }))).toMatchObject({
      type: ['string', 'null'],
      enum: ['a', 'b', null],
    })
  })
})
