import {
  Amqp,
  createDb,
  createLogger,
  makeEvent,
  migrate,
  type CloudEvent,
  type EventData,
} from '@clinic/platform'
import { verifyLink } from '@clinic/platform/core'
import {
  createTestVhost,
  declareWorkQueue,
  deleteTestVhost,
  freshCompanyId,
  outboxOf,
  testServices,
  waitFor,
} from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { directoriesOf } from '../../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'
import { messageTx } from '../../src/db/repositories/messages-repository'
import type { MessagingLimits } from '../../src/domain/queue-message'
import { WAITLIST_LINK } from '../../src/domain/link-kinds'
import { applyOfferEvent, startWaitlistConsumer, type OfferMessageDeps } from '../../src/waitlist/consumer'
import { offerQueue } from '../../src/waitlist/queue'
import { LINK_GRACE_SECONDS } from '../../src/waitlist/offer-text'
import { guardianOf, makeContact } from '../fixtures'
import { TEST_LINK_SECRET, startDirectory, type Directory } from '../helpers'

/**
 * The consumer of `comms.waitlist` (DESIGN.md section 20): one message per `waitlist.entry.offered`,
 * to the patient or the guardian, through the one admission path, in the consumer's transaction.
 * Most tests apply the event in a transaction as the platform consumer does; the last ones run the
 * real consumer on a vhost of their own.
 */
const logLines: string[] = []
const log = createLogger({
  service: 'comms',
  level: 'trace',
  destination: { write: (l) => void logLines.push(l) },
})
const LIMITS: MessagingLimits = {
  dailySms: 1000,
  dailyEmail: 1000,
  hourlyPerAddress: 1000,
  smsCountries: ['ES'],
}
let now = Date.parse('2030-01-07T08:00:00Z')
let knex: Knex
let owner: Knex
let directory: Directory
let deps: OfferMessageDeps

beforeAll(async () => {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 6 })
  owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  directory = await startDirectory()
  deps = depsWith(LIMITS)
})
afterAll(async () => {
  await directory.close()
  await Promise.all([knex.destroy(), owner.destroy()])
})
afterEach(() => {
  now = Date.parse('2030-01-07T08:00:00Z')
  directory.setDown(false)
})

function depsWith(limits: MessagingLimits): OfferMessageDeps {
  return {
    log,
    patients: directoriesOf(testServices('comms', directory.url)).patients,
    send: offerQueue({ messageTx, limits }),
    links: { baseUrl: 'https://clinic.example/', secret: TEST_LINK_SECRET },
    clock: () => new Date(now),
  }
}

type Offered = EventData<'waitlist.entry.offered'>
let n = 0
/** The appointments service's event for an offer to `patientId`: 10:30 in Madrid, held until 09:30. */
function offered(companyId: number, patientId: string, over: Partial<Offered> = {}): CloudEvent {
  n++
  const data: Offered = {
    id: `0190d000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    patient_id: patientId,
    codalmacen: 'ALM1',
    practitioner: null,
    status: 'offered',
    version: 2,
    offer_id: `0190d100-0000-7000-8000-${String(n).padStart(12, '0')}`,
    starts_at: '2030-01-08T09:30:00.000Z',
    ends_at: '2030-01-08T10:00:00.000Z',
    offered_practitioner: 'dra-ficticia',
    time_zone: 'Europe/Madrid',
    expires_at: '2030-01-07T08:30:00.000Z',
    channel: null,
    ...over,
  }
  return makeEvent({
    type: 'waitlist.entry.offered',
    source: 'clinic/appointments',
    companyId,
    subject: data.id,
    data,
  })
}
const apply = (e: CloudEvent, d = deps) => knex.transaction((trx) => applyOfferEvent(d, e, trx))
const messagesOf = (companyId: number) =>
  owner('messages').where({ idempresa: companyId }).orderBy('created_at') as Promise<
    Array<Record<string, string>>
  >
const patientOf = (companyId: number, over: Parameters<typeof makeContact>[0] = {}) => {
  const p = makeContact(over)
  directory.addPatient(companyId, p)
  return p
}
const logged = (msg: string) => logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === msg)

describe('waitlist.entry.offered: the offer message', () => {
  test("a minor's offer goes to the guardian, in Spanish, with the slot's local time, center, practitioner, until when, and the link", async () => {
    const company = freshCompanyId()
    const child = patientOf(company, { requires_legal_guardian: true, guardian: guardianOf() })
    const e = offered(company, child.id)
    await apply(e)
    const [m, ...more] = await messagesOf(company)
    expect(more).toEqual([])
    expect(m).toMatchObject({
      patient_id: child.id,
      appointment_id: null,
      channel: 'email',
      recipient_role: 'guardian',
      recipient_name: 'Tutora Ficticia',
      recipient_address: 'guardian@example.test',
      template: 'waitlist_offer',
      subject: 'Hay una cita libre para usted',
      status: 'queued',
    })
    expect(m!.body).toContain(
      'Hola Tutora Ficticia: se ha liberado una cita de su lista de espera el martes, 8 de enero de 2030 a las 10:30 (Europe/Madrid) en el centro ALM1 con dra-ficticia.',
    )
    expect(m!.body).toContain('La guardamos para usted hasta las 09:30 del lunes, 7 de enero de 2030.')
    const token = /https:\/\/clinic\.example\/p\/w\/(\S+)$/.exec(m!.body!)?.[1]
    expect(await verifyLink(TEST_LINK_SECRET, WAITLIST_LINK, token!, new Date(now))).toEqual({
      ok: true,
      claims: {
        companyId: company,
        offerId: (e.data as Offered).offer_id,
        lang: 'es',
        // The offer's expiry and the grace in which its page still says what became of it.
        exp: Date.parse('2030-01-07T08:30:00Z') / 1000 + LINK_GRACE_SECONDS,
      },
    })
    const [queued] = await outboxOf(owner, company, m!.id!)
    expect(queued).toMatchObject({
      type: 'comms.message.queued',
      payload: { actorname: 'comms-waitlist', data: { recipient_role: 'guardian', appointment_id: null } },
    })
    expect(JSON.stringify(queued!.payload)).not.toContain(token!)
  })

  test("on the entry's channel when it names one, in the patient's language (English: SMS, no subject)", async () => {
    const company = freshCompanyId()
    const p = patientOf(company, { language: 'en-GB', preferred_channel: 'email', phone: '+34600000123' })
    await apply(offered(company, p.id, { channel: 'sms' }))
    const [m] = await messagesOf(company)
    expect(m).toMatchObject({
      channel: 'sms',
      recipient_role: 'patient',
      recipient_address: '+34600000123',
      subject: null,
    })
    expect(m!.body).toMatch(
      /^Hello Testa Ficticia\d+, an appointment from your waitlist has become free on Tuesday, 8 January 2030 at 10:30 \(Europe\/Madrid\) at centre ALM1 with dra-ficticia\. We are holding it for you until 09:30 on Monday, 7 January 2030\. Accept or decline it here: https:\/\/clinic\.example\/p\/w\/\S+$/,
    )
  })

  test('an opted-out address: the message is kept as suppressed, never sent', async () => {
    const company = freshCompanyId()
    const p = patientOf(company)
    await owner('preferences').insert({
      idempresa: company,
      channel: 'email',
      address: p.email,
      opted_out: true,
      source: 'api',
    })
    await apply(offered(company, p.id))
    expect((await messagesOf(company)).map((m) => m.status)).toEqual(['suppressed'])
  })

  test('a refusal of the send path (the hourly quota, a country SMS may not reach, no address) is logged, not retried: the offer will expire', async () => {
    const company = freshCompanyId()
    const p = patientOf(company, { email: `quota-${company}@example.test` })
    const strict = depsWith({ ...LIMITS, hourlyPerAddress: 1 })
    await apply(offered(company, p.id), strict)
    const second = offered(company, p.id)
    await expect(apply(second, strict)).resolves.toBeUndefined()
    const abroad = patientOf(company, { phone: '+12025550123', preferred_channel: 'sms' })
    await expect(apply(offered(company, abroad.id))).resolves.toBeUndefined()
    const mute = patientOf(company, { email: null, phone: null })
    await expect(apply(offered(company, mute.id))).resolves.toBeUndefined()
    expect((await messagesOf(company)).map((m) => m.recipient_address)).toEqual([p.email])
    const refusals = logged('waitlist offer message refused; not sent (the offer will expire)')
    expect(refusals.filter((l) => l.offer_id === (second.data as Offered).offer_id)).toMatchObject([
      { code: 'messaging_quota_exceeded' },
    ])
    expect(refusals.map((l) => l.code)).toEqual(
      expect.arrayContaining(['destination_not_allowed', 'no_contact_address']),
    )
    // No patient data in any of those lines.
    expect(JSON.stringify(refusals)).not.toMatch(/example\.test|\+1202/)
  })

  test('an unknown patient, or an offer already expired, sends nothing; the patients service down is thrown (the event comes again)', async () => {
    const company = freshCompanyId()
    await expect(apply(offered(company, '0190d200-0000-7000-8000-000000000001'))).resolves.toBeUndefined()
    const p = patientOf(company)
    now = Date.parse('2030-01-07T08:30:00Z')
    await apply(offered(company, p.id))
    now = Date.parse('2030-01-07T08:00:00Z')
    directory.setDown(true)
    await expect(apply(offered(company, p.id))).rejects.toMatchObject({ code: 'upstream_unavailable' })
    expect(await messagesOf(company)).toEqual([])
  })
})

describe('the consumer of comms.waitlist', () => {
  let vhost: string
  let amqp: Amqp
  let stop: () => Promise<void>
  beforeAll(async () => {
    vhost = await createTestVhost()
    await declareWorkQueue(vhost, 'comms.waitlist', ['waitlist.entry.offered'], { retryDelayMs: 100 })
    amqp = new Amqp({ url: vhost, log, name: 'comms-waitlist-test' })
    await amqp.start()
    const consumer = await startWaitlistConsumer({ ...deps, amqp, knex })
    stop = () => consumer.stop()
  })
  afterAll(async () => {
    await stop()
    await amqp.close()
    await deleteTestVhost(vhost)
  })

  test('one message per event, however often it is delivered', async () => {
    const company = freshCompanyId()
    const p = patientOf(company)
    const e = offered(company, p.id)
    await amqp.publish([e, e])
    await amqp.publish([e])
    await waitFor(async () => (await messagesOf(company)).length === 1, { what: 'the offer message' })
    const done = await owner('processed_events').where({ event_id: e.id })
    expect(done).toHaveLength(1)
    // Another offer to the same patient is another message.
    await amqp.publish([offered(company, p.id)])
    await waitFor(async () => (await messagesOf(company)).length === 2, { what: 'the second offer message' })
    expect(await messagesOf(company)).toHaveLength(2)
  })

  test('the patients service down: the event is retried, and sent once it is back', async () => {
    const company = freshCompanyId()
    const p = patientOf(company)
    directory.setDown(true)
    const calls = directory.calls
    await amqp.publish([offered(company, p.id)])
    await waitFor(() => directory.calls >= calls + 2, { what: 'a retried lookup' })
    expect(await messagesOf(company)).toEqual([])
    directory.setDown(false)
    await waitFor(async () => (await messagesOf(company)).length === 1, { what: 'the offer message' })
  })
})
