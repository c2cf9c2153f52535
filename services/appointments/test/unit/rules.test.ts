import {
  appointmentFieldErrors,
  canonicalTimeZone,
  fieldsFromCreate,
  parseInstant,
  planPatch,
} from '../../src/domain/rules'
import type { AppointmentStatus } from '../../src/schemas/appointment'
import { appointmentIn } from '../fixtures'

const base = (status: AppointmentStatus = 'scheduled') =>
  appointmentIn(status, { reason: 'revision', version: 3 })
const refusal = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    return err as { status: number; code: string; errors?: Array<{ path: string; message: string }> }
  }
  throw new Error('expected a refusal')
}

describe('times', () => {
  test('any offset in, UTC out', () => {
    const f = fieldsFromCreate(
      {
        patient_id: '0190C5A0-0000-7000-8000-0000000000B1',
        practitioner: 'dra-ejemplo',
        starts_at: '2026-11-23T09:30:00+01:00',
        ends_at: '2026-11-23T05:00:00-04:00',
      },
      'ALM1',
    )
    expect(f).toMatchObject({
      starts_at: '2026-11-23T08:30:00.000Z',
      ends_at: '2026-11-23T09:00:00.000Z',
      patient_id: '0190c5a0-0000-7000-8000-0000000000b1',
      time_zone: 'Europe/Madrid',
      status: 'scheduled',
    })
  })

  test.each([
    ['ends before it starts', '2026-11-23T10:00:00Z', '2026-11-23T09:00:00Z', 'must be after starts_at'],
    ['ends when it starts', '2026-11-23T10:00:00Z', '2026-11-23T10:00:00Z', 'must be after starts_at'],
    [
      'lasts more than 12 h',
      '2026-11-23T08:00:00Z',
      '2026-11-23T20:00:00.001Z',
      'must be at most 12 h after starts_at',
    ],
  ])('%s: 400 on /ends_at', (_case, starts_at, ends_at, message) => {
    expect(appointmentFieldErrors({ starts_at, ends_at })).toEqual([{ path: '/ends_at', message }])
  })

  test('exactly 12 h is allowed', () => {
    expect(
      appointmentFieldErrors({ starts_at: '2026-11-23T08:00:00Z', ends_at: '2026-11-23T20:00:00Z' }),
    ).toEqual([])
  })

  test.each([
    ['1899-12-31T23:59:59Z', 'must be between 1900 and 2200'],
    ['2200-01-01T00:00:00Z', 'must be between 1900 and 2200'],
    ['0000-01-01T00:00:00Z', 'must be between 1900 and 2200'],
    ['9999-12-31T23:59:59Z', 'must be between 1900 and 2200'],
    ['2026-12-31T23:59:60Z', 'must be a valid RFC 3339 date-time'],
    ['9999-12-31 23:00:00Z', 'must be between 1900 and 2200'],
    ['2026-12-31', 'must be a valid RFC 3339 date-time'],
  ])('%s is refused: %s', (value, message) => {
    expect(parseInstant(value)).toEqual({ error: message })
    expect(appointmentFieldErrors({ starts_at: value })).toEqual([{ path: '/starts_at', message }])
  })

  test('moving only starts_at past ends_at names starts_at', () => {
    const err = refusal(() => planPatch(base(), { starts_at: '2026-11-23T09:00:00Z' }))
    expect(err).toMatchObject({
      status: 400,
      errors: [{ path: '/starts_at', message: 'must be before ends_at' }],
    })
  })

  test('moving both keeps the length rule', () => {
    const plan = planPatch(base(), {
      starts_at: '2026-11-24T09:00:00+01:00',
      ends_at: '2026-11-24T09:45:00+01:00',
    })
    expect(plan.changes).toEqual(['starts_at', 'ends_at'])
    expect(plan.values).toEqual({
      starts_at: '2026-11-24T08:00:00.000Z',
      ends_at: '2026-11-24T08:45:00.000Z',
    })
  })

  test('the same instant in another offset is no change', () => {
    expect(planPatch(base(), { starts_at: '2026-11-23T09:30:00+01:00' }).changes).toEqual([])
  })
})

describe('time zones', () => {
  test.each(['Europe/Madrid', 'America/New_York', 'UTC', 'Atlantic/Canary', 'europe/madrid'])(
    '%s is known',
    (z) => {
      expect(canonicalTimeZone(z)).not.toBeNull()
      expect(appointmentFieldErrors({ time_zone: z })).toEqual([])
    },
  )
  test('the stored name is the canonical spelling', () => {
    expect(canonicalTimeZone('europe/madrid')).toBe('Europe/Madrid')
  })
  test.each(['Mars/Olympus_Mons', 'Europe/Atlantis', 'Nowhere'])('%s is a 400 on /time_zone', (z) => {
    expect(appointmentFieldErrors({ time_zone: z })).toEqual([
      { path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' },
    ])
  })
})

describe('what each status lets a PATCH change', () => {
  test.each(['completed', 'cancelled', 'no_show'] as const)('%s: only notes', (status) => {
    expect(planPatch(base(status), { notes: 'llamar antes' }).changes).toEqual(['notes'])
    for (const patch of [
      { reason: 'otra' },
      { practitioner: 'dr-otro' },
      { starts_at: '2026-11-23T08:00:00Z' },
      { time_zone: 'UTC' },
      { codalmacen: 'ALM2' },
    ])
      expect(refusal(() => planPatch(base(status), patch))).toMatchObject({
        status: 409,
        code: 'invalid_transition',
      })
  })

  test.each(['scheduled', 'confirmed'] as const)(
    '%s: times, practitioner, center and zone may change',
    (s) => {
      const plan = planPatch(base(s), {
        practitioner: 'dr-otro',
        codalmacen: 'ALM2',
        time_zone: 'Atlantic/Canary',
        starts_at: '2026-11-23T10:00:00Z',
        ends_at: '2026-11-23T10:30:00Z',
      })
      expect(plan.changes).toEqual(['codalmacen', 'practitioner', 'starts_at', 'ends_at', 'time_zone'])
    },
  )

  test('checked_in: reason and notes may change, the schedule may not', () => {
    expect(planPatch(base('checked_in'), { reason: 'otra', notes: 'x' }).changes).toEqual(['reason', 'notes'])
    for (const patch of [
      { practitioner: 'dr-otro' },
      { ends_at: '2026-11-23T09:10:00Z' },
      { codalmacen: 'ALM2' },
    ])
      expect(refusal(() => planPatch(base('checked_in'), patch))).toMatchObject({
        code: 'invalid_transition',
      })
  })

  test('values equal to the stored ones are no change', () => {
    expect(planPatch(base(), { practitioner: 'dra-ejemplo', reason: 'revision' }).changes).toEqual([])
  })
})

describe('cancellation_reason', () => {
  test('cancelling needs it', () => {
    expect(refusal(() => planPatch(base(), { status: 'cancelled' }))).toMatchObject({
      status: 400,
      code: 'validation_failed',
      errors: [{ path: '/cancellation_reason', message: 'is required to cancel' }],
    })
  })
  test('is kept when cancelling', () => {
    const plan = planPatch(base('confirmed'), { status: 'cancelled', cancellation_reason: 'aviso' })
    expect(plan.values).toEqual({ status: 'cancelled', cancellation_reason: 'aviso' })
    expect(plan.status).toEqual({ from: 'confirmed', to: 'cancelled' })
  })
  test('is refused without cancelling', () => {
    expect(refusal(() => planPatch(base(), { cancellation_reason: 'aviso' }))).toMatchObject({
      status: 400,
      errors: [{ path: '/cancellation_reason', message: 'may only be sent with status cancelled' }],
    })
  })
  // The state machine first: a status that cannot be cancelled is 409 whatever the body says.
  test.each(['checked_in', 'completed', 'no_show'] as const)(
    'cancelling a %s appointment is 409 invalid_transition, with or without a reason',
    (status) => {
      for (const patch of [
        { status: 'cancelled' as const },
        { status: 'cancelled' as const, cancellation_reason: 'aviso' },
      ])
        expect(refusal(() => planPatch(base(status), patch))).toMatchObject({
          status: 409,
          code: 'invalid_transition',
        })
    },
  )
  test('cancelling a cancelled appointment again is no change, not a 400', () => {
    expect(planPatch(base('cancelled'), { status: 'cancelled' }).changes).toEqual([])
  })
  test('of a cancelled appointment cannot change', () => {
    expect(refusal(() => planPatch(base('cancelled'), { cancellation_reason: 'otra' }))).toMatchObject({
      status: 409,
    })
  })
})
