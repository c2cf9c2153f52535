import { AppError } from '@clinic/platform'
import { planPatch } from '../../src/domain/rules'
import { FINAL_STATUSES, transitionRefusal, type TransitionVia } from '../../src/domain/status'
import { STATUSES, type AppointmentStatus } from '../../src/schemas/appointment'
import { appointmentIn } from '../fixtures'

/**
 * DESIGN.md section 4, written out by hand (not read from the table under test):
 *   scheduled -> confirmed -> checked_in -> completed; scheduled|confirmed -> cancelled | no_show;
 *   checked_in only through POST /appointments/{id}/checkin, from scheduled or confirmed.
 */
const ALLOWED: Array<[AppointmentStatus, AppointmentStatus, TransitionVia]> = [
  ['scheduled', 'confirmed', 'patch'],
  ['scheduled', 'cancelled', 'patch'],
  ['scheduled', 'no_show', 'patch'],
  ['scheduled', 'checked_in', 'checkin'],
  ['confirmed', 'cancelled', 'patch'],
  ['confirmed', 'no_show', 'patch'],
  ['confirmed', 'checked_in', 'checkin'],
  ['checked_in', 'completed', 'patch'],
]
const isAllowed = (from: string, to: string, via: string) =>
  ALLOWED.some(([f, t, v]) => f === from && t === to && v === via)

const every: Array<[AppointmentStatus, AppointmentStatus, TransitionVia]> = []
for (const from of STATUSES)
  for (const to of STATUSES)
    if (from !== to) for (const via of ['patch', 'checkin'] as const) every.push([from, to, via])
const allowed = every.filter(([f, t, v]) => isAllowed(f, t, v))
const refused = every.filter(([f, t, v]) => !isAllowed(f, t, v))

const appointment = appointmentIn

describe('the state machine table', () => {
  test('covers every pair: 8 allowed, the rest refused', () => {
    expect(allowed).toHaveLength(8)
    expect(refused).toHaveLength(every.length - 8)
  })

  test.each(allowed)('%s -> %s by %s is allowed', (from, to, via) => {
    expect(transitionRefusal(from, to, via)).toBeNull()
  })

  test.each(refused)('%s -> %s by %s is refused', (from, to, via) => {
    expect(transitionRefusal(from, to, via)).toEqual(expect.any(String))
  })

  test('completed, cancelled and no_show are the final statuses', () => {
    expect([...FINAL_STATUSES].sort()).toEqual(['cancelled', 'completed', 'no_show'])
  })
})

describe('status through PATCH (planPatch)', () => {
  const byPatch = every.filter(([, , via]) => via === 'patch')
  test.each(byPatch)('%s -> %s', (from, to) => {
    const patch = to === 'cancelled' ? { status: to, cancellation_reason: 'aviso' } : { status: to }
    const run = () => planPatch(appointment(from), patch)
    if (isAllowed(from, to, 'patch')) {
      expect(run().status).toEqual({ from, to })
    } else {
      expect(run).toThrow(AppError)
      try {
        run()
      } catch (err) {
        expect(err).toMatchObject({ status: 409, code: 'invalid_transition' })
      }
    }
  })

  test('checked_in by PATCH points to the check-in endpoint', () => {
    expect(() => planPatch(appointment('confirmed'), { status: 'checked_in' })).toThrow(/checkin/)
  })

  test('the same status again is no change', () => {
    for (const s of STATUSES) expect(planPatch(appointment(s), { status: s }).changes).toEqual([])
  })
})
