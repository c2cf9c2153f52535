import { ValidationFailed, decodeCursor, encodeCursor, refuseReadOnly } from '@clinic/platform'

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

describe('refuseReadOnly', () => {
  const readOnly = ['id', 'version', 'created_at', 'updated_at', 'idempresa'] as const

  it('accepts a body without read-only fields', () => {
    expect(() => refuseReadOnly({ first_name: 'Test', notes: null }, readOnly)).not.toThrow()
  })

  it('lists every read-only field sent, even with a null or undefined value', () => {
    const err = thrown(() =>
      refuseReadOnly({ id: 'x', first_name: 'Test', version: undefined, idempresa: null }, readOnly),
    )
    expect(err.status).toBe(400)
    expect(err.code).toBe('validation_failed')
    expect(err.errors).toEqual([
      { path: '/id', message: 'is read-only' },
      { path: '/version', message: 'is read-only' },
      { path: '/idempresa', message: 'is read-only' },
    ])
  })
})
