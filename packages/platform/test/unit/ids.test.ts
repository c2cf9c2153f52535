import { isUuid, uuidv7 } from '@clinic/platform'

describe('uuidv7', () => {
  it('makes version-7 RFC 9562 ids', () => {
    const id = uuidv7()
    expect(isUuid(id)).toBe(true)
    expect(id[14]).toBe('7')
    expect(['8', '9', 'a', 'b']).toContain(id[19])
  })
  it('sorts by creation, also within one millisecond', () => {
    const ms = Date.now() + 1000
    const ids = Array.from({ length: 1000 }, () => uuidv7(ms))
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
  it('encodes the timestamp in the first 48 bits', () => {
    // The clock only moves forward here: a time ahead of every earlier call is used as given.
    const ms = Date.now() + 60_000
    const id = uuidv7(ms)
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(ms)
  })
})
