import { randomUUID } from 'node:crypto'
import { createDb, createLogger, makeEvent, migrate } from '@clinic/platform'
import { createTestDatabase, dropTestDatabase, testServices } from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { directoriesOf } from '../../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'
import { PreferencesRepository } from '../../src/db/repositories/preferences-repository'
import { messageTx } from '../../src/db/repositories/messages-repository'
import { RemindersRepository } from '../../src/db/repositories/reminders-repository'
import { applySmsKeyword } from '../../src/domain/sms-keywords'
import type { AppointmentInfo } from '../../src/domain/directories'
import { verifyLink } from '@clinic/platform/core'
import { APPOINTMENT_LINK } from '../../src/domain/link-kinds'
import { applyAppointmentEvent } from '../../src/reminders/consumer'
import { reminderQueue } from '../../src/reminders/queue'
import { ReminderWorker } from '../../src/reminders/worker'
import { startDirectory, type Directory } from '../helpers'

const COMPANY = 7101
const OTHER = 7102
const LINK_SECRET = 'reminders-int-link-secret-0123456789abcdef'
const log = createLogger({ service: 'comms', level: process.env.LOG_LEVEL ?? 'silent' })

let url: string
let knex: Knex
let owner: Knex
let directory: Directory
let store: RemindersRepository
let now = new Date('2026-06-09T10:00:00Z')
let worker: ReminderWorker

const patient = (id: string, o: Partial<Record<string, unknown>> = {}) => ({
  id,
  codalmacen: 'C1',
  first_name: 'Lucía',
  last_name: 'Pérez',
  email: 'lucia@example.com',
  phone: '+34600000001',
  preferred_channel: 'sms',
  language: 'es',
  requires_legal_guardian: false,
  guardian: null,
  version: 1,
  ...o,
})

let n = 0
function appointment(o: Partial<AppointmentInfo> = {}): AppointmentInfo {
  n++
  return {
    id: `0190a000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    patient_id: '0190b000-0000-7000-8000-000000000001',
    codalmacen: 'C1',
    practitioner: 'Dr. Ruiz',
    starts_at: '2026-06-12T07:30:00.000Z', // 09:30 in Madrid
    ends_at: '2026-06-12T08:00:00.000Z',
    time_zone: 'Europe/Madrid',
    status: 'scheduled',
    version: 1,
    ...o,
  }
}

/** The appointments service's event for `a`, as its consumer gets it, applied in a transaction. */
async function event(
  type: 'appointment.created' | 'appointment.updated',
  a: AppointmentInfo,
  company = COMPANY,
) {
  directory.addAppointment(company, a)
  const data =
    type === 'appointment.created'
      ? { ...a, checked_in_at: null }
      : { id: a.id, patient_id: a.patient_id, version: a.version, changes: ['starts_at', 'status'] }
  const e = makeEvent({
    type,
    source: 'clinic/appointments',
    companyId: company,
    subject: a.id,
    data,
    time: now,
  } as never)
  await knex.transaction((trx) =>
    applyAppointmentEvent({ store, appointments: directories().appointments, log }, e, trx),
  )
}

const directories = () => directoriesOf(testServices('comms', directory.url))
const reminders = async (appointmentId: string) =>
  (await owner('reminders').where({ appointment_id: appointmentId }).orderBy('due_at')) as Array<
    Record<string, unknown>
  >
const setPolicy = (company = COMPANY, extra = {}) =>
  store.setPolicy(company, {
    enabled: true,
    offsets: ['P1D', 'PT2H'],
    quiet_hours: { start: '21:00', end: '08:00' },
    ...extra,
  })
const run = async (at: string) => {
  now = new Date(at)
  worker.wake()
  await worker.idle()
}

beforeAll(async () => {
  url = await createTestDatabase()
  await migrate(url, SCHEMA, migrations)
  knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 10 })
  owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  directory = await startDirectory()
  store = new RemindersRepository(knex)
  directory.addPatient(COMPANY, patient('0190b000-0000-7000-8000-000000000001') as never)
  worker = new ReminderWorker({
    knex,
    log,
    store,
    ...directories(),
    queue: reminderQueue({
      messageTx,
      limits: { dailySms: 1000, dailyEmail: 1000, hourlyPerAddress: 1000, smsCountries: ['ES'] },
    }),
    clock: () => now,
    concurrency: 4,
    links: { baseUrl: 'https://clinic.example', secret: LINK_SECRET },
    pollMs: 3_600_000,
  })
})

afterAll(async () => {
  await worker.stop()
  await directory.close()
  await Promise.all([knex.destroy(), owner.destroy()])
  await dropTestDatabase(url)
})

beforeEach(async () => {
  now = new Date('2026-06-09T10:00:00Z')
  await owner('reminder_policies').delete()
})

describe('reminders follow their appointment', () => {
  it('a policy of P1D and PT2H schedules two for a booking 3 days ahead, the night one before quiet hours', async () => {
    await setPolicy()
    const a = appointment()
    await event('appointment.created', a)
    const rows = await reminders(a.id)
    expect(rows.map((r) => [r.offset_iso, (r.due_at as Date).toISOString(), r.status])).toEqual([
      ['P1D', '2026-06-11T07:30:00.000Z', 'scheduled'],
      // 07:30 local on the day is in quiet hours (21:00-08:00): 20:59 the evening before.
      ['PT2H', '2026-06-11T18:59:00.000Z', 'scheduled'],
    ])
  })

  it('moving reschedules both; cancelling cancels both; a late or repeated event changes nothing', async () => {
    await setPolicy()
    const a = appointment()
    await event('appointment.created', a)
    const moved = {
      ...a,
      starts_at: '2026-06-13T09:00:00.000Z',
      ends_at: '2026-06-13T09:30:00.000Z',
      version: 2,
    }
    await event('appointment.updated', moved)
    let rows = await reminders(a.id)
    expect(rows.filter((r) => r.status === 'scheduled').map((r) => (r.due_at as Date).toISOString())).toEqual(
      ['2026-06-12T09:00:00.000Z', '2026-06-13T07:00:00.000Z'],
    )
    expect(rows.filter((r) => r.status === 'cancelled')).toHaveLength(2)
    // The booking event again (redelivered late): the newer state stays.
    await event('appointment.created', a)
    expect((await reminders(a.id)).filter((r) => r.status === 'scheduled')).toHaveLength(2)
    await event('appointment.updated', { ...moved, status: 'cancelled', version: 3 })
    rows = await reminders(a.id)
    expect(rows.every((r) => r.status === 'cancelled')).toBe(true)
    expect(
      rows.find((r) => r.starts_at instanceof Date && r.reason === 'the appointment is cancelled'),
    ).toBeTruthy()
  })

  it('with no policy, or another company’s policy, nothing is scheduled', async () => {
    const a = appointment()
    await event('appointment.created', a)
    await setPolicy(OTHER)
    const b = appointment()
    await event('appointment.created', b)
    expect(await reminders(a.id)).toEqual([])
    expect(await reminders(b.id)).toEqual([])
  })
})

describe('the worker', () => {
  it('sends each once at its due time, to the guardian of a minor, in their language and local time, with a link', async () => {
    await setPolicy()
    const child = '0190b000-0000-7000-8000-000000000002'
    directory.addPatient(
      COMPANY,
      patient(child, {
        first_name: 'Leo',
        language: 'en',
        requires_legal_guardian: true,
        guardian: {
          name: 'Ana Pérez',
          relationship: 'mother',
          email: 'ana@example.com',
          phone: '+34600000002',
        },
      }) as never,
    )
    const a = appointment({ patient_id: child })
    await event('appointment.created', a)
    await run('2026-06-11T07:29:00Z')
    expect((await reminders(a.id)).map((r) => r.status)).toEqual(['scheduled', 'scheduled'])
    await run('2026-06-11T07:30:00Z')
    await run('2026-06-11T07:31:00Z')
    let rows = await reminders(a.id)
    expect(rows.map((r) => r.status)).toEqual(['sent', 'scheduled'])
    const [m] = await owner('messages').where({ id: rows[0]!.message_id })
    expect(m).toMatchObject({
      recipient_role: 'guardian',
      recipient_name: 'Ana Pérez',
      recipient_address: '+34600000002',
      channel: 'sms',
      template: 'appointment_reminder',
      appointment_id: a.id,
      status: 'queued',
    })
    // English, 09:30 in Madrid (07:30Z), and a link naming this appointment until it starts.
    expect(m.body).toContain('Hello Ana Pérez')
    expect(m.body).toContain('09:30')
    const token = /\/p\/a\/(\S+)/.exec(m.body as string)![1]!
    const link = await verifyLink(LINK_SECRET, APPOINTMENT_LINK, token, now)
    expect(link).toEqual({
      ok: true,
      claims: {
        id: rows[0]!.id,
        companyId: COMPANY,
        appointmentId: a.id,
        lang: 'en',
        exp: Date.parse(a.starts_at) / 1000,
      },
    })
    await run('2026-06-11T19:00:00Z')
    rows = await reminders(a.id)
    expect(rows.map((r) => r.status)).toEqual(['sent', 'sent'])
    expect(await owner('messages').where({ appointment_id: a.id })).toHaveLength(2)
    // The queued events are in the outbox, one per message.
    const events = await owner('outbox').where({ type: 'comms.message.queued' }).select('payload')
    expect(events.filter((e) => JSON.stringify(e.payload).includes(a.id))).toHaveLength(2)
  })

  it('never sends for an appointment cancelled or moved since, even when the event has not arrived yet', async () => {
    await setPolicy()
    const a = appointment()
    await event('appointment.created', a)
    directory.addAppointment(COMPANY, { ...a, status: 'cancelled', version: 2 })
    await run('2026-06-11T07:30:00Z')
    expect((await reminders(a.id))[0]).toMatchObject({
      status: 'cancelled',
      reason: 'the appointment is cancelled',
    })
    const b = appointment()
    await event('appointment.created', b)
    directory.addAppointment(COMPANY, { ...b, starts_at: '2026-06-20T07:30:00.000Z', version: 2 })
    await run('2026-06-11T07:30:00Z')
    expect((await reminders(b.id))[0]).toMatchObject({ status: 'cancelled', reason: 'the appointment moved' })
    expect(await owner('messages').whereIn('appointment_id', [a.id, b.id])).toEqual([])
  })

  it('two workers racing over the same due reminders queue each once', async () => {
    await setPolicy(COMPANY, { offsets: ['PT1H'], quiet_hours: null })
    const booked = Array.from({ length: 30 }, () => appointment())
    for (const a of booked) await event('appointment.created', a)
    const second = new ReminderWorker({
      ...(worker as unknown as { o: ConstructorParameters<typeof ReminderWorker>[0] }).o,
      concurrency: 3,
    })
    now = new Date('2026-06-12T06:30:00Z')
    worker.wake()
    second.wake()
    await Promise.all([worker.idle(), second.idle()])
    await second.stop()
    const ids = booked.map((a) => a.id)
    const messages = await owner('messages').whereIn('appointment_id', ids)
    expect(messages).toHaveLength(30)
    expect(new Set(messages.map((m) => m.appointment_id)).size).toBe(30)
  })

  it('a worker that died after its claim loses nothing: the lease runs out and the next claim sends it', async () => {
    await setPolicy(COMPANY, { offsets: ['PT1H'], quiet_hours: null })
    const a = appointment()
    await event('appointment.created', a)
    // A claim whose worker never came back.
    const claimed = await store.claim(new Date('2026-06-12T06:30:00Z'), 100, 60_000)
    expect(claimed.map((c) => c.appointmentId)).toContain(a.id)
    await run('2026-06-12T06:30:30Z')
    expect((await reminders(a.id))[0]!.status).toBe('scheduled')
    await run('2026-06-12T06:31:01Z')
    expect((await reminders(a.id))[0]!.status).toBe('sent')
    expect(await owner('messages').where({ appointment_id: a.id })).toHaveLength(1)
  })

  it('an appointment that has started, or a patient without an address, is skipped with the reason', async () => {
    await setPolicy(COMPANY, { offsets: ['PT1H'], quiet_hours: null })
    const a = appointment()
    await event('appointment.created', a)
    await run('2026-06-12T07:31:00Z')
    expect((await reminders(a.id))[0]).toMatchObject({
      status: 'skipped',
      reason: 'the appointment had started',
    })
    const lost = '0190b000-0000-7000-8000-000000000003'
    directory.addPatient(COMPANY, patient(lost, { email: null, phone: null }) as never)
    now = new Date('2026-06-09T10:00:00Z')
    const b = appointment({ patient_id: lost })
    await event('appointment.created', b)
    await run('2026-06-12T06:30:00Z')
    expect((await reminders(b.id))[0]).toMatchObject({ status: 'skipped', reason: 'no_contact_address' })
  })

  it('STOP from a guardian’s phone suppresses the reminders of both children; START restores them', async () => {
    await setPolicy(COMPANY, { offsets: ['PT1H'], quiet_hours: null })
    const phone = '+34600000077'
    const guardian = { name: 'Marta Gil', relationship: 'mother', email: null, phone }
    const [one, two] = ['0190b000-0000-7000-8000-000000000071', '0190b000-0000-7000-8000-000000000072']
    for (const id of [one!, two!])
      directory.addPatient(COMPANY, patient(id, { requires_legal_guardian: true, guardian }) as never)
    const day = (d: number) => `2026-06-${d}T07:30:00.000Z`
    const book = async (patientId: string, d: number) => {
      now = new Date('2026-06-09T10:00:00Z')
      const a = appointment({
        patient_id: patientId,
        starts_at: day(d),
        ends_at: day(d).replace('07:30', '08:00'),
      })
      await event('appointment.created', a)
      return a
    }
    const first = await book(one!, 12)
    await run('2026-06-12T06:30:00Z')
    expect((await reminders(first.id))[0]!.status).toBe('sent')

    const preferences = { store: new PreferencesRepository(knex), clock: () => new Date() }
    const sid = () => `SM${randomUUID().replaceAll('-', '')}`
    expect(await applySmsKeyword(preferences, { From: phone, Body: 'stop', MessageSid: sid() })).toEqual({
      action: 'opt_out',
      companies: 1,
    })
    const [a, b] = [await book(one!, 14), await book(two!, 14)]
    await run('2026-06-14T06:30:00Z')
    for (const x of [a, b]) {
      const [r] = await reminders(x.id)
      expect(r).toMatchObject({ status: 'suppressed', reason: 'the address opted out' })
      const [m] = await owner('messages').where({ id: r!.message_id })
      expect(m).toMatchObject({ status: 'suppressed', recipient_address: phone })
    }
    expect(
      await owner('outbox')
        .where({ type: 'comms.message.queued' })
        .whereRaw("payload->'data'->>'appointment_id' IN (?, ?)", [a.id, b.id]),
    ).toEqual([])

    expect(await applySmsKeyword(preferences, { From: phone, Body: 'START', MessageSid: sid() })).toEqual({
      action: 'opt_in',
      companies: 1,
    })
    const c = await book(two!, 16)
    await run('2026-06-16T06:30:00Z')
    expect((await reminders(c.id))[0]!.status).toBe('sent')
  })

  it('a reminder over the hourly limit of its address waits for Retry-After, or is skipped past the start', async () => {
    await setPolicy(COMPANY, { offsets: ['PT2H'], quiet_hours: null })
    const phone = '+34600000088'
    const guardian = { name: 'Rosa Gil', relationship: 'mother', email: null, phone }
    const ids = ['0190b000-0000-7000-8000-000000000081', '0190b000-0000-7000-8000-000000000082']
    for (const id of ids)
      directory.addPatient(COMPANY, patient(id, { requires_legal_guardian: true, guardian }) as never)
    const [x, y] = [appointment({ patient_id: ids[0] }), appointment({ patient_id: ids[1] })]
    await event('appointment.created', x)
    await event('appointment.created', y)
    const strict = new ReminderWorker({
      ...(worker as unknown as { o: ConstructorParameters<typeof ReminderWorker>[0] }).o,
      queue: reminderQueue({
        messageTx,
        limits: { dailySms: 100, dailyEmail: 100, hourlyPerAddress: 1, smsCountries: ['ES'] },
      }),
    })
    now = new Date('2026-06-12T05:30:00Z')
    strict.wake()
    await strict.idle()
    const rows = [(await reminders(x.id))[0]!, (await reminders(y.id))[0]!]
    expect(rows.map((r) => r.status).sort()).toEqual(['scheduled', 'sent'])
    const waiting = rows.find((r) => r.status === 'scheduled')!
    expect(waiting.reason).toBe('messaging_quota_exceeded')
    // Retry-After is about an hour: 06:30Z, still before the 07:30Z start.
    const next = (waiting.next_attempt_at as Date).getTime()
    expect(Math.abs(next - Date.parse('2026-06-12T06:30:00Z'))).toBeLessThan(120_000)
    // Claimed again at 07:00Z (the hourly window, in database time, is still full): the next try
    // would be after the 07:30Z start, so it is skipped.
    now = new Date('2026-06-12T07:00:00Z')
    strict.wake()
    await strict.idle()
    await strict.stop()
    const [after] = await owner('reminders').where({ id: waiting.id })
    expect(after).toMatchObject({ status: 'skipped', reason: 'messaging_quota_exceeded' })
  })
})
