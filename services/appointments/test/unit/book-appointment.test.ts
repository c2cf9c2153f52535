import { AppError, uuidv7, type Ctx } from '@clinic/platform/core'
import { FakeTenantStore, testCtx, testPrincipal } from '@clinic/platform/testing'
import type { AppointmentStore, AppointmentTx } from '../../src/domain/appointment-store'
import { bookAppointment, type BookAppointment } from '../../src/domain/book-appointment'
import { SlotConflict } from '../../src/domain/errors'
import type { PatientDirectory } from '../../src/domain/directories'
import type { Appointment } from '../../src/schemas/appointment'

/**
 * The appointments store in memory: the platform's fake tenant store with the appointments' `Tx`.
 * Which slots overlap is the database's rule (its exclusion constraints, tested against PostgreSQL
 * in test/int); here an insert fails with `refusal` when a test sets it, as the database would.
 */
class FakeAppointments extends FakeTenantStore<AppointmentTx, Appointment> implements AppointmentStore {
  /** What the next inserts fail with (the database's answer to a slot taken meanwhile). */
  refusal: Error | null = null

  constructor() {
    super((scope) => ({
      findById: async (id) => scope.get(id),
      insert: async (id, fields) => {
        if (this.refusal) throw this.refusal
        const now = new Date().toISOString()
        return scope.put({ id, ...fields, created_at: now, updated_at: now, version: 1 })
      },
      insertMany: async () => {
        throw new Error('not used by bookAppointment')
      },
      update: async () => {
        throw new Error('not used by bookAppointment')
      },
      checkIn: async () => {
        throw new Error('not used by bookAppointment')
      },
      // Free-text practitioners: no record, no hours to check, no holds.
      workingCheck: async () => null,
      practitionerZone: async () => null,
      lockCalendars: async () => {},
      findHold: async () => null,
      releaseHold: async () => false,
      insertHold: async () => {
        throw new Error('not used by bookAppointment')
      },
      publish: async (events) => scope.publish(events),
    }))
  }
  list(): never {
    throw new Error('not used by bookAppointment')
  }
  availability(): never {
    throw new Error('not used for free-text practitioners')
  }
  async conflictCenters(): Promise<string[]> {
    return []
  }
}

/** The patients service as a list of (company, patient id); counts the lookups. */
function fakeDirectory(known: Array<[number, string]> = []) {
  const patients = new Set(known.map(([c, id]) => `${c}/${id}`))
  const directory = {
    lookups: 0,
    add: (companyId: number, id: string) => void patients.add(`${companyId}/${id}`),
    find: async (ctx: Ctx, id: string) => {
      directory.lookups++
      return patients.has(`${ctx.auth.companyId}/${id}`) ? { id } : null
    },
  }
  return directory satisfies PatientDirectory & Record<string, unknown>
}

const patientId = uuidv7()
const input = (
  over: Partial<BookAppointment['body']> = {},
  key?: string,
  hash = 'hash-1',
): BookAppointment => ({
  body: {
    patient_id: patientId,
    codalmacen: 'ALM1',
    practitioner: 'dra-ficticia',
    starts_at: '2031-03-03T09:00:00+01:00',
    ends_at: '2031-03-03T09:30:00+01:00',
    ...over,
  },
  queryCenter: undefined,
  idempotencyKey: key,
  requestHash: hash,
})

const codeOf = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    (err: AppError) => err.code,
  )

function setup() {
  const ctx = testCtx(testPrincipal())
  const store = new FakeAppointments()
  const patients = fakeDirectory([[ctx.auth.companyId, patientId]])
  return { ctx, store, patients, deps: { store, patients } }
}

describe('bookAppointment (on the fake store)', () => {
  it('books a scheduled appointment in UTC and writes its appointment.created event', async () => {
    const { ctx, store, deps } = setup()
    const { body } = await bookAppointment(ctx, deps, input())
    expect(body).toMatchObject({
      status: 'scheduled',
      starts_at: '2031-03-03T08:00:00.000Z',
      patient_id: patientId,
    })
    expect(await store.findById(ctx.auth.companyId, body.id)).toEqual(body)
    expect(store.events.map((e) => [e.type, e.idempresa, e.subject, e.actorid])).toEqual([
      ['appointment.created', ctx.auth.companyId, body.id, ctx.auth.userId],
    ])
  })

  it('keeps companies apart: another company neither finds the appointment nor knows the patient', async () => {
    const { ctx, store, deps } = setup()
    const { body } = await bookAppointment(ctx, deps, input())
    const other = testCtx(testPrincipal())
    expect(await store.findById(other.auth.companyId, body.id)).toBeNull()
    expect(await codeOf(bookAppointment(other, deps, input()))).toBe('unknown_patient')
  })

  it('refuses a patient the patients service does not know (422 unknown_patient), writing nothing', async () => {
    const { ctx, store, deps } = setup()
    expect(await codeOf(bookAppointment(ctx, deps, input({ patient_id: uuidv7() })))).toBe('unknown_patient')
    expect(store.transactions).toBe(0)
    expect(store.events).toEqual([])
  })

  it('answers the slot conflict the database raises (409 slot_conflict) and writes nothing of it', async () => {
    const { ctx, store, deps } = setup()
    await bookAppointment(ctx, deps, input())
    store.refusal = new SlotConflict('practitioner')
    const overlapping = input({ starts_at: '2031-03-03T08:15:00Z', ends_at: '2031-03-03T08:45:00Z' })
    expect(await codeOf(bookAppointment(ctx, deps, overlapping))).toBe('slot_conflict')
    // Its transaction rolled back: no second row, no second event.
    expect(store.events).toHaveLength(1)
    expect(store.rows.get(ctx.auth.companyId)?.size).toBe(1)
  })

  it('replays a used Idempotency-Key without asking the patients service again', async () => {
    const { ctx, store, patients, deps } = setup()
    const first = await bookAppointment(ctx, deps, input({}, 'k-1'))
    expect(patients.lookups).toBe(1)
    const again = await bookAppointment(ctx, deps, input({}, 'k-1'))
    expect(again).toEqual({ body: first.body, replayed: true })
    expect(patients.lookups).toBe(1)
    expect(store.events).toHaveLength(1)
  })

  it('answers 409 idempotency_conflict for the same key with another request', async () => {
    const { ctx, store, deps } = setup()
    await bookAppointment(ctx, deps, input({}, 'k-1'))
    expect(
      await codeOf(bookAppointment(ctx, deps, input({ practitioner: 'dr-otro' }, 'k-1', 'hash-2'))),
    ).toBe('idempotency_conflict')
    expect(store.events).toHaveLength(1)
  })
})
