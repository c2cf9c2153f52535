import type { PatientFields } from '../../src/schemas/patient'
import {
  applyPatch,
  changedFields,
  fieldsFromCreate,
  guardianSatisfied,
  isRealDate,
  latestToday,
  normalizeAddress,
  patientFieldErrors,
} from '../../src/domain/rules'

const base: PatientFields = fieldsFromCreate(
  { first_name: 'Testa', last_name: 'Ficticia', birth_date: '1980-01-01' },
  null,
)

describe('guardian rule', () => {
  const g = (guardian: PatientFields['guardian'], requires = true) =>
    guardianSatisfied({ requires_legal_guardian: requires, guardian })
  test('not required: anything goes', () => {
    expect(g(null, false)).toBe(true)
    expect(g({ name: 'T', relationship: null, email: null, phone: null }, false)).toBe(true)
  })
  test('required: a name and an email or a phone', () => {
    expect(g(null)).toBe(false)
    expect(g({ name: 'T', relationship: 'mother', email: null, phone: null })).toBe(false)
    expect(g({ name: '  ', relationship: null, email: 'g@example.test', phone: null })).toBe(false)
    expect(g({ name: 'T', relationship: null, email: 'g@example.test', phone: null })).toBe(true)
    expect(g({ name: 'T', relationship: null, email: null, phone: '+34600000000' })).toBe(true)
  })
})

describe('birth_date rules', () => {
  const now = new Date('2026-11-22T09:30:00Z')
  test('real calendar dates only', () => {
    expect(isRealDate('2024-02-29')).toBe(true)
    expect(isRealDate('2023-02-29')).toBe(false)
    expect(isRealDate('2026-13-01')).toBe(false)
    expect(isRealDate('2026-1-01')).toBe(false)
  })
  test('not in the future, allowing for the latest time zone on Earth', () => {
    expect(latestToday(now)).toBe('2026-11-22')
    expect(latestToday(new Date('2026-11-22T10:00:00Z'))).toBe('2026-11-23')
    expect(patientFieldErrors({ birth_date: '2026-11-22' }, now)).toEqual([])
    expect(patientFieldErrors({ birth_date: '2026-11-23' }, now)).toEqual([
      { path: '/birth_date', message: 'must not be in the future' },
    ])
    expect(patientFieldErrors({ birth_date: '1899-12-31' }, now)).toEqual([
      { path: '/birth_date', message: 'must be on or after 1900-01-01' },
    ])
  })
  test('defensive about bodies that failed their schema', () => {
    expect(patientFieldErrors(null, now)).toEqual([])
    expect(patientFieldErrors([], now)).toEqual([])
    expect(patientFieldErrors({ birth_date: 19800101 }, now)).toEqual([])
    expect(patientFieldErrors({ birth_date: '2999-02-30' }, now)).toEqual([]) // the format error says it
  })
})

describe('create defaults and normalization', () => {
  test('defaults', () => {
    expect(base).toMatchObject({
      language: 'es',
      requires_legal_guardian: false,
      guardian: null,
      address: null,
      codalmacen: null,
    })
  })
  test('addresses carry all six keys; an empty one is no address', () => {
    expect(normalizeAddress({ city: 'X' })).toEqual({
      line1: null,
      line2: null,
      city: 'X',
      postal_code: null,
      region: null,
      country: null,
    })
    expect(normalizeAddress({})).toBeNull()
    expect(normalizeAddress({ city: null })).toBeNull()
  })
})

describe('PATCH merge', () => {
  const current: PatientFields = {
    ...base,
    email: 'a@example.test',
    address: normalizeAddress({ line1: 'L1', city: 'C' }),
    guardian: { name: 'G', relationship: 'mother', email: 'g@example.test', phone: null },
  }
  test('fields left out stay; null clears', () => {
    const next = applyPatch(current, { phone: '+34600000000', email: null })
    expect(next).toEqual({ ...current, phone: '+34600000000', email: null })
  })
  test('address and guardian are replaced whole, not merged key by key', () => {
    const next = applyPatch(current, { address: { city: 'D' }, guardian: { name: 'H' } })
    expect(next.address).toEqual(normalizeAddress({ city: 'D' }))
    expect(next.guardian).toEqual({ name: 'H', relationship: null, email: null, phone: null })
    expect(applyPatch(current, { guardian: null, address: null })).toMatchObject({
      guardian: null,
      address: null,
    })
  })
  test('unknown keys never reach the result', () => {
    const next = applyPatch(current, { idempresa: 5 } as never)
    expect(next).not.toHaveProperty('idempresa')
  })
})

describe('change detection', () => {
  test('names only the fields whose value differs, nested objects by value', () => {
    const same = applyPatch(base, { first_name: 'Testa', address: null })
    expect(changedFields(base, same)).toEqual([])
    const withAddress = applyPatch(base, { address: { city: 'X' } })
    expect(changedFields(base, withAddress)).toEqual(['address'])
    expect(
      changedFields(withAddress, applyPatch(withAddress, { address: { city: 'X', line1: null } })),
    ).toEqual([])
    expect(changedFields(base, applyPatch(base, { notes: 'n', codalmacen: 'ALM1', language: 'en' }))).toEqual(
      ['codalmacen', 'language', 'notes'],
    )
  })
})
