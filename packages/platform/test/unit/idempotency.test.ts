import { canonicalJson, requestHash } from '@clinic/platform'

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    )
  })
  it('writes scalars and arrays as JSON does', () => {
    expect(canonicalJson('x"y')).toBe('"x\\"y"')
    expect(canonicalJson(1.5)).toBe('1.5')
    expect(canonicalJson(null)).toBe('null')
    expect(canonicalJson(undefined)).toBe('null')
    expect(canonicalJson([1, 'a', false])).toBe('[1,"a",false]')
    const deep = { list: [{ b: 2, a: 1 }], s: 'ñ' }
    expect(JSON.parse(canonicalJson(deep))).toEqual(deep)
  })
})

describe('requestHash', () => {
  const body = { first_name: 'Test', last_name: 'Patient', address: { city: 'X', line1: 'Y' } }
  const reordered = { address: { line1: 'Y', city: 'X' }, last_name: 'Patient', first_name: 'Test' }

  it('does not depend on key order', () => {
    expect(requestHash('POST', '/patients', body)).toBe(requestHash('POST', '/patients', reordered))
    expect(requestHash('POST', '/patients', body)).toMatch(/^[0-9a-f]{64}$/)
  })
  it('differs for other bodies, methods or paths', () => {
    const h = requestHash('POST', '/patients', body)
    expect(requestHash('POST', '/patients', { ...body, last_name: 'Other' })).not.toBe(h)
    expect(requestHash('POST', '/patients', { ...body, address: { ...body.address, city: 'Z' } })).not.toBe(h)
    expect(requestHash('POST', '/patients', { ...body, extra: null })).not.toBe(h)
    expect(requestHash('PUT', '/patients', body)).not.toBe(h)
    expect(requestHash('POST', '/appointments', body)).not.toBe(h)
    // Arrays keep their order: it is meaningful.
    expect(requestHash('POST', '/x', [1, 2])).not.toBe(requestHash('POST', '/x', [2, 1]))
  })
})
