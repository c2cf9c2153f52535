import { AppError, type Ctx } from '@clinic/platform'
import { testPrincipal } from '@clinic/platform/testing'
import pino from 'pino'
import { centerForWrite } from '../../src/domain/center-rules'
import { cursorOf, normalizeQuery, parseCursor } from '../../src/domain/list-patients'
import { contactOf, patientCreated, patientUpdated } from '../../src/events/patient-events'
import type { Patient } from '../../src/schemas/patient'

const patient: Patient = {
  id: '01900000-0000-7000-8000-000000000001',
  codalmacen: 'ALM1',
  first_name: 'Testa',
  last_name: 'Ficticia',
  birth_date: '1980-01-01',
  sex: 'female',
  national_id: '00000000T',
  email: 'testa@example.test',
  phone: '+34600000000',
  address: { line1: 'Calle 1', line2: null, city: 'X', postal_code: '00000', region: null, country: 'ES' },
  preferred_channel: 'email',
  language: 'es',
  requires_legal_guardian: true,
  guardian: { name: 'Tutor', relationship: 'father', email: null, phone: '+34600000001' },
  notes: 'clinical free text',
  created_at: '2026-11-22T09:30:00.123Z',
  updated_at: '2026-11-22T09:30:00.123Z',
  version: 2,
}

describe('cursors', () => {
  test('round-trip for each sort', () => {
    expect(parseCursor('last_name', cursorOf('last_name', patient))).toEqual({
      sort: 'last_name',
      last_name: 'Ficticia',
      first_name: 'Testa',
      id: patient.id,
    })
    expect(parseCursor('-created_at', cursorOf('-created_at', patient))).toEqual({
      sort: '-created_at',
      created_at: patient.created_at,
      id: patient.id,
    })
  })
  test('a cursor of another sort, a forged id or garbage is a 400', () => {
    const bad = (sort: 'last_name' | '-created_at', c: string) => {
      try {
        parseCursor(sort, c)
      } catch (err) {
        return (err as AppError).status
      }
      return 200
    }
    expect(bad('-created_at', cursorOf('last_name', patient))).toBe(400)
    expect(bad('last_name', cursorOf('-created_at', patient))).toBe(400)
    expect(
      bad('last_name', Buffer.from(JSON.stringify(['l', 'a', 'b', "x' or 1=1"])).toString('base64url')),
    ).toBe(400)
    expect(
      bad('-created_at', Buffer.from(JSON.stringify(['c', 'yesterday', patient.id])).toString('base64url')),
    ).toBe(400)
    expect(bad('last_name', 'not base64 json')).toBe(400)
  })
  test('q is trimmed and its spaces collapsed; blank is no filter', () => {
    expect(normalizeQuery('  ana   garcía ')).toBe('ana garcía')
    expect(normalizeQuery('   ')).toBeUndefined()
    expect(normalizeQuery(undefined)).toBeUndefined()
  })
})

describe('centers on writes', () => {
  test('known and allowed codes pass; unknown 400, forbidden 403; none needs a company-wide token', () => {
    const all = testPrincipal()
    const limited = testPrincipal({ allowedCenters: ['ALM1'] })
    const status = (f: () => unknown) => {
      try {
        f()
        return 200
      } catch (err) {
        return `${(err as AppError).status} ${(err as AppError).code}`
      }
    }
    expect(centerForWrite(all, 'ALM2')).toBe('ALM2')
    expect(centerForWrite(all, null)).toBeNull()
    expect(status(() => centerForWrite(all, 'NOPE'))).toBe('400 unknown_center')
    expect(status(() => centerForWrite(limited, 'ALM2'))).toBe('403 center_forbidden')
    expect(status(() => centerForWrite(limited, null))).toBe('400 validation_failed')
    expect(centerForWrite(limited, 'ALM1')).toBe('ALM1')
  })
})

describe('event payloads', () => {
  const ctx: Ctx = {
    auth: testPrincipal({ companyId: 7 }),
    log: pino({ level: 'silent' }),
    requestId: 'req-1',
  }
  test('the contact projection has what comms needs and never notes, national id, birth date or address', () => {
    const c = contactOf(patient)
    expect(Object.keys(c).sort()).toEqual(
      [
        'codalmacen',
        'email',
        'first_name',
        'guardian',
        'id',
        'language',
        'last_name',
        'phone',
        'preferred_channel',
        'requires_legal_guardian',
        'version',
      ].sort(),
    )
    expect(c.guardian).toEqual(patient.guardian)
  })
  test('envelopes carry company, center, subject, actor and request id', () => {
    const created = patientCreated(ctx, patient)
    expect(created).toMatchObject({
      specversion: '1.0',
      type: 'patient.created',
      source: 'clinic/patients',
      subject: patient.id,
      idempresa: 7,
      codalmacen: 'ALM1',
      actorid: ctx.auth.userId,
      requestid: 'req-1',
    })
    const updated = patientUpdated(ctx, { ...patient, codalmacen: null }, ['email'])
    expect(updated.data.changes).toEqual(['email'])
    expect(updated).not.toHaveProperty('codalmacen')
    for (const e of [created, updated])
      expect(JSON.stringify(e)).not.toMatch(/clinical free text|00000000T|1980-01-01|Calle 1/)
  })
})
