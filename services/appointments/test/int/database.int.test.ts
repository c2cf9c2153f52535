import { createDb, migrate, uuidv7 } from '@clinic/platform'
import { freshCompanyId } from '@clinic/platform/testing'
import { AppointmentsRepository } from '../../src/db/repositories/appointments-repository'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'
import { SlotConflict } from '../../src/domain/errors'
import type { AppointmentFields } from '../../src/schemas/appointment'

/** The database's own guarantees, through the repository as the service role (RLS applies). */
const url = process.env.DATABASE_URL!
const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 10 })
const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
const repo = new AppointmentsRepository(knex)
beforeAll(() => migrate(url, SCHEMA, migrations))
afterAll(() => Promise.all([knex.destroy(), owner.destroy()]))

const patient = () => uuidv7()
function fields(o: Partial<AppointmentFields> = {}): AppointmentFields {
  return {
    patient_id: patient(),
    codalmacen: 'ALM1',
    practitioner: 'dra-ejemplo',
    starts_at: '2026-11-23T09:00:00.000Z',
    ends_at: '2026-11-23T09:30:00.000Z',
    time_zone: 'Europe/Madrid',
    reason: null,
    notes: null,
    status: 'scheduled',
    cancellation_reason: null,
    checked_in_at: null,
    series_id: null,
    occurrence: null,
    recurrence_id: null,
    waitlist_entry_id: null,
    ...o,
  }
}
const book = (company: number, o: Partial<AppointmentFields> = {}) =>
  repo.transaction(company, (tx) => tx.insert(uuidv7(), fields(o)))
const update = (company: number, id: string, changes: Partial<AppointmentFields>) =>
  repo.transaction(company, async (tx) => tx.update((await tx.findById(id, { forUpdate: true }))!, changes))
const holder = (work: Promise<unknown>) =>
  work.then(
    () => 'booked',
    (err) => (err instanceof SlotConflict ? err.holder : `unexpected: ${String(err)}`),
  )

describe('no double booking (exclusion constraints)', () => {
  test('the practitioner cannot hold two overlapping appointments; the detail says so', async () => {
    const c = freshCompanyId()
    await book(c)
    const err = await book(c, {
      starts_at: '2026-11-23T09:29:00.000Z',
      ends_at: '2026-11-23T10:00:00.000Z',
    }).catch((e) => e)
    expect(err).toBeInstanceOf(SlotConflict)
    expect(err).toMatchObject({ status: 409, code: 'slot_conflict', holder: 'practitioner' })
    expect(err.detail).toMatch(/practitioner/)
  })

  test('the patient cannot hold two overlapping appointments, even with two practitioners', async () => {
    const c = freshCompanyId()
    const p = patient()
    await book(c, { patient_id: p })
    const err = await book(c, { patient_id: p, practitioner: 'dr-otro', codalmacen: 'ALM2' }).catch((e) => e)
    expect(err).toMatchObject({ code: 'slot_conflict', holder: 'patient' })
    expect(err.detail).toMatch(/patient/)
  })

  test('back to back is not an overlap; another company or practitioner is free', async () => {
    const c = freshCompanyId()
    await book(c)
    await book(c, { starts_at: '2026-11-23T09:30:00.000Z', ends_at: '2026-11-23T10:00:00.000Z' })
    await book(c, { starts_at: '2026-11-23T08:30:00.000Z', ends_at: '2026-11-23T09:00:00.000Z' })
    await book(c, { practitioner: 'dr-otro' })
    await book(freshCompanyId())
  })

  test.each(['cancelled', 'no_show'] as const)('a %s appointment frees its slot', async (status) => {
    const c = freshCompanyId()
    const first = await book(c)
    expect(await holder(book(c))).toBe('practitioner')
    await update(c, first.id, status === 'cancelled' ? { status, cancellation_reason: 'aviso' } : { status })
    expect(await holder(book(c))).toBe('booked')
  })

  test('moving onto a taken slot is refused and changes nothing', async () => {
    const c = freshCompanyId()
    await book(c)
    const other = await book(c, {
      starts_at: '2026-11-23T11:00:00.000Z',
      ends_at: '2026-11-23T11:30:00.000Z',
    })
    expect(await holder(update(c, other.id, { starts_at: '2026-11-23T09:15:00.000Z' }))).toBe('practitioner')
    const after = await repo.findById(c, other.id)
    expect(after).toEqual(other)
  })

  test('ten concurrent bookings of one slot: exactly one wins', async () => {
    const c = freshCompanyId()
    const results = await Promise.all(Array.from({ length: 10 }, () => holder(book(c))))
    expect(results.sort()).toEqual(['booked', ...Array(9).fill('practitioner')])
    const [n] = await owner('appointments').where({ idempresa: c }).count({ n: '*' })
    expect(Number(n!.n)).toBe(1)
  })

  test('ten concurrent bookings of one patient with ten practitioners: exactly one wins', async () => {
    const c = freshCompanyId()
    const p = patient()
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => holder(book(c, { patient_id: p, practitioner: `dr-${i}` }))),
    )
    expect(results.sort()).toEqual(['booked', ...Array(9).fill('patient')])
  })
})

describe('check constraints repeat the domain rules', () => {
  const insertRaw = (o: Partial<AppointmentFields>) =>
    owner('appointments').insert({ idempresa: freshCompanyId(), id: uuidv7(), ...fields(o) })
  test.each([
    ['ends before it starts', { ends_at: '2026-11-23T08:00:00.000Z' }, 'appointments_length'],
    ['longer than 12 h', { ends_at: '2026-11-23T21:00:00.001Z' }, 'appointments_length'],
    ['cancelled without a reason', { status: 'cancelled' }, 'appointments_cancellation_reason'],
    ['checked in without checked_in_at', { status: 'checked_in' }, 'appointments_checked_in_at'],
    ['an unknown status', { status: 'lost' as 'scheduled' }, 'appointments_status_check'],
  ] as const)('%s', async (_case, o, constraint) => {
    await expect(insertRaw(o as Partial<AppointmentFields>)).rejects.toMatchObject({
      code: '23514',
      constraint,
    })
  })
})

describe('counter rows (exact meta.total)', () => {
  /** n per "center:status", from a grouped query over the given table. */
  const tally = async (sql: string, c: number) =>
    Object.fromEntries(
      ((await owner.raw(sql, [c])).rows as Array<{ k: string; n: number }>)
        .filter((r) => Number(r.n) !== 0)
        .map((r) => [r.k, Number(r.n)]),
    )
  const counters = (c: number) =>
    tally(
      `select codalmacen || ':' || status as k, sum(n) as n from appointment_counts where idempresa = ? group by 1`,
      c,
    )
  const truth = (c: number) =>
    tally(
      `select codalmacen || ':' || status as k, count(*) as n from appointments where idempresa = ? group by 1`,
      c,
    )

  test('follow inserts, status changes and center moves, also concurrent ones', async () => {
    const c = freshCompanyId()
    const booked = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        book(c, { practitioner: `dr-${i}`, codalmacen: i % 3 ? 'ALM1' : 'ALM2' }),
      ),
    )
    await Promise.all(
      booked.map((a, i) =>
        update(
          c,
          a.id,
          i % 4 === 0
            ? { status: 'cancelled', cancellation_reason: 'aviso' }
            : i % 4 === 1
              ? { codalmacen: 'ALM3' }
              : i % 4 === 2
                ? { status: 'confirmed', codalmacen: 'ALM2' }
                : { notes: 'sin cambio de contador' },
        ),
      ),
    )
    expect(await counters(c)).toEqual(await truth(c))
    expect(Object.values(await counters(c)).reduce((s, n) => s + n, 0)).toBe(12)
  })
})

describe('row-level security', () => {
  test('without app.idempresa the service role sees no appointment, counter or idempotency key', async () => {
    const c = freshCompanyId()
    await book(c)
    expect(await owner('appointments').where({ idempresa: c })).toHaveLength(1)
    expect(await knex('appointments').where({ idempresa: c })).toHaveLength(0)
    expect(await knex('appointment_counts').where({ idempresa: c })).toHaveLength(0)
    expect(await knex('idempotency_keys')).toHaveLength(0)
  })

  test('with another company set, a query without a company filter sees only that company', async () => {
    const a = freshCompanyId()
    const b = freshCompanyId()
    await book(a)
    await book(b)
    const rows = await knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(b)])
      return trx('appointments').select('idempresa')
    })
    expect(rows).toEqual([{ idempresa: b }])
  })

  test('the service role cannot write a row of another company', async () => {
    const a = freshCompanyId()
    const b = freshCompanyId()
    const mine = await book(a)
    const asB = <T>(fn: (trx: typeof knex) => Promise<T>) =>
      knex.transaction(async (trx) => {
        await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(b)])
        return fn(trx)
      })
    await expect(
      asB((trx) => trx('appointments').insert({ idempresa: a, id: uuidv7(), ...fields() })),
    ).rejects.toThrow(/row-level security/)
    expect(await asB((trx) => trx('appointments').where({ id: mine.id }).update({ notes: 'x' }))).toBe(0)
    expect(await repo.findById(b, mine.id)).toBeNull()
  })
})
