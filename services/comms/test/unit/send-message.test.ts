import { AppError, type Ctx } from '@clinic/platform/core'
import { FakeTenantStore, testCtx, testPrincipal } from '@clinic/platform/testing'
import type { AppointmentDirectory } from '../../src/domain/directories'
import type { MessageStore, MessageTx } from '../../src/domain/message-store'
import type { PatientContact, PatientDirectory } from '../../src/domain/directories'
import { sendMessage, type SendMessage } from '../../src/domain/send-message'
import { makeContact } from '../fixtures'
import type { VersionedMessage } from '../../src/schemas/message'

/** The messages store in memory: the platform's fake tenant store with the messages' `Tx`. */
class FakeMessages extends FakeTenantStore<MessageTx, VersionedMessage> implements MessageStore {
  constructor() {
    super((scope) => ({
      insert: async (id, f) =>
        scope.put({
          id,
          patient_id: f.patient_id,
          appointment_id: f.appointment_id,
          codalmacen: f.codalmacen,
          status: f.status ?? 'queued',
          recipient: { role: f.recipient_role, name: f.recipient_name, address: f.recipient_address },
          channel: f.channel,
          subject: f.subject,
          template: f.template,
          override_guardian: f.override_guardian,
          attempts: 0,
          last_error: null,
          provider_id: null,
          created_at: new Date().toISOString(),
          sent_at: null,
          version: 1,
        }),
      // Consent and quotas have their own tests on PostgreSQL (test/int/limits.int.test.ts).
      optedOut: async () => false,
      admitToAddress: async () => ({ admitted: true }),
      admitToday: async () => ({ admitted: true }),
      publish: async (events) => scope.publish(events),
    }))
  }
  list(): never {
    throw new Error('not used by sendMessage')
  }
  receiptTransaction(): never {
    throw new Error('not used by sendMessage')
  }
}

// Each with its own obviously fake address.
const contact = (over: Parameters<typeof makeContact>[0] = {}) =>
  makeContact({ email: 'testa@example.test', ...over })

/** The patients service as a map per company; counts the lookups. */
function fakePatients() {
  const byCompany = new Map<string, PatientContact>()
  const directory = {
    lookups: 0,
    add: (companyId: number, p: PatientContact) => void byCompany.set(`${companyId}/${p.id}`, p),
    find: async (ctx: Ctx, id: string) => {
      directory.lookups++
      return byCompany.get(`${ctx.auth.companyId}/${id}`) ?? null
    },
  }
  return directory satisfies PatientDirectory & Record<string, unknown>
}

const noAppointments: AppointmentDirectory = { find: async () => null }
const limits = { dailySms: 2000, dailyEmail: 20000, hourlyPerAddress: 10, smsCountries: ['ES'] }

const codeOf = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    (err: AppError) => err.code,
  )

function setup(patient = contact()) {
  const ctx = testCtx(testPrincipal())
  const store = new FakeMessages()
  const patients = fakePatients()
  patients.add(ctx.auth.companyId, patient)
  const send = (body: Partial<SendMessage['body']>, key?: string, hash = 'hash-1', as: Ctx = ctx) =>
    sendMessage(
      as,
      { store, patients, appointments: noAppointments, limits },
      {
        body: { patient_id: patient.id, body: 'Recordatorio ficticio', ...body },
        idempotencyKey: key,
        requestHash: hash,
      },
    )
  return { ctx, store, patients, patient, send }
}

describe('sendMessage (on the fake store)', () => {
  it('queues the message to the patient and writes its comms.message.queued event', async () => {
    const { ctx, store, send } = setup()
    const { body } = await send({})
    expect(body).toMatchObject({
      status: 'queued',
      channel: 'email',
      recipient: { role: 'patient', address: 'testa@example.test' },
    })
    expect(await store.findById(ctx.auth.companyId, body.id)).toEqual(body)
    expect(store.events.map((e) => [e.type, e.idempresa, e.subject, e.actorid, e.data])).toEqual([
      [
        'comms.message.queued',
        ctx.auth.companyId,
        body.id,
        ctx.auth.userId,
        expect.objectContaining({ id: body.id, recipient_role: 'patient', status: 'queued' }),
      ],
    ])
  })

  it('routes to the guardian of a patient who requires one, over the guardian’s channel', async () => {
    const guardian = { name: 'Tutor Ficticio', relationship: 'father', email: null, phone: '+34600000001' }
    const { send } = setup(contact({ requires_legal_guardian: true, guardian }))
    const { body } = await send({})
    expect(body).toMatchObject({
      channel: 'sms',
      recipient: { role: 'guardian', name: 'Tutor Ficticio', address: '+34600000001' },
    })
    // Asked for the guardian of a patient without one: 422 guardian_required.
    const alone = setup()
    expect(await codeOf(alone.send({ recipient: 'guardian' }))).toBe('guardian_required')
    expect(alone.store.events).toEqual([])
  })

  it('keeps companies apart: another company neither finds the message nor knows the patient', async () => {
    const { ctx, store, send } = setup()
    const { body } = await send({})
    const other = testCtx(testPrincipal())
    expect(await store.findById(other.auth.companyId, body.id)).toBeNull()
    expect(await codeOf(send({}, undefined, 'hash-1', other))).toBe('unknown_patient')
    expect(store.events.map((e) => e.idempresa)).toEqual([ctx.auth.companyId])
  })

  it('replays a used Idempotency-Key without asking the patients service again', async () => {
    const { store, patients, send } = setup()
    const first = await send({}, 'k-1')
    const again = await send({}, 'k-1')
    expect(again).toEqual({ body: first.body, replayed: true })
    expect(patients.lookups).toBe(1)
    expect(store.events).toHaveLength(1)
  })

  it('answers 409 idempotency_conflict for the same key with another body', async () => {
    const { store, send } = setup()
    await send({}, 'k-1')
    expect(await codeOf(send({ body: 'otro' }, 'k-1', 'hash-2'))).toBe('idempotency_conflict')
    expect(store.events).toHaveLength(1)
  })
})
