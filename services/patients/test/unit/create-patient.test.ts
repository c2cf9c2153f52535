import { AppError } from '@clinic/platform/core'
import { FakeTenantStore, testCtx, testPrincipal } from '@clinic/platform/testing'
import { createPatient, type CreatePatient } from '../../src/domain/create-patient'
import type { PatientStore, PatientTx } from '../../src/domain/patient-store'
import type { Patient } from '../../src/schemas/patient'

/** The patients store in memory: the platform's fake tenant store with the patients' `Tx`. */
class FakePatients extends FakeTenantStore<PatientTx, Patient> implements PatientStore {
  constructor() {
    super((scope) => ({
      findById: async (id) => scope.get(id),
      insert: async (id, fields) => {
        const now = new Date().toISOString()
        return scope.put({ id, ...fields, created_at: now, updated_at: now, version: 1 })
      },
      update: async () => {
        throw new Error('not used by createPatient')
      },
      publish: async (events) => scope.publish(events),
    }))
  }
  create: PatientStore['create'] = (companyId, idempotency, p) =>
    this.idempotent(companyId, idempotency, async (tx) => {
      const body = await tx.insert(p.id, p.fields)
      await tx.publish(p.events)
      return { body }
    })
  list(): never {
    throw new Error('not used by createPatient')
  }
  fhirSearch(): never {
    throw new Error('not used by createPatient')
  }
}

const input = (over: Partial<CreatePatient> = {}): CreatePatient => ({
  body: { first_name: 'Testa', last_name: 'Ficticia', birth_date: '1980-01-01', codalmacen: 'ALM1' },
  queryCenter: undefined,
  idempotencyKey: undefined,
  requestHash: 'hash-1',
  ...over,
})

const codeOf = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    (err: AppError) => err.code,
  )

describe('createPatient (on the fake store)', () => {
  it('writes the patient and its patient.created event in one transaction, for the caller', async () => {
    const store = new FakePatients()
    const ctx = testCtx(testPrincipal())
    const { body, replayed } = await createPatient(ctx, store, input())
    expect(replayed).toBeUndefined()
    expect(await store.findById(ctx.auth.companyId, body.id)).toEqual(body)
    expect(store.events.map((e) => [e.type, e.idempresa, e.subject, e.actorid, e.requestid])).toEqual([
      ['patient.created', ctx.auth.companyId, body.id, ctx.auth.userId, ctx.requestId],
    ])
  })

  it('keeps companies apart: another company never finds the patient', async () => {
    const store = new FakePatients()
    const a = testCtx(testPrincipal())
    const b = testCtx(testPrincipal())
    const { body } = await createPatient(a, store, input())
    expect(await store.findById(b.auth.companyId, body.id)).toBeNull()
  })

  it('replays the first answer for the same Idempotency-Key and body, writing nothing more', async () => {
    const store = new FakePatients()
    const ctx = testCtx(testPrincipal())
    const first = await createPatient(ctx, store, input({ idempotencyKey: 'k-1' }))
    const again = await createPatient(ctx, store, input({ idempotencyKey: 'k-1' }))
    expect(again).toEqual({ body: first.body, replayed: true })
    expect(store.events).toHaveLength(1)
    expect(store.rows.get(ctx.auth.companyId)?.size).toBe(1)
    // The key is the token's: another token of the company creates again.
    const other = testCtx({ ...ctx.auth, tokenId: 'another-token' })
    const third = await createPatient(other, store, input({ idempotencyKey: 'k-1' }))
    expect(third.body.id).not.toBe(first.body.id)
  })

  it('answers 409 idempotency_conflict for the same key with another body', async () => {
    const store = new FakePatients()
    const ctx = testCtx(testPrincipal())
    await createPatient(ctx, store, input({ idempotencyKey: 'k-1' }))
    expect(
      await codeOf(createPatient(ctx, store, input({ idempotencyKey: 'k-1', requestHash: 'hash-2' }))),
    ).toBe('idempotency_conflict')
    expect(store.events).toHaveLength(1)
  })

  it('refuses a patient who requires a guardian without one (422 guardian_required), writing nothing', async () => {
    const store = new FakePatients()
    const ctx = testCtx(testPrincipal())
    const body = { ...input().body, requires_legal_guardian: true }
    expect(await codeOf(createPatient(ctx, store, input({ body })))).toBe('guardian_required')
    const withGuardian = { ...body, guardian: { name: 'Tutor Ficticio', phone: '+34600000001' } }
    expect(await codeOf(createPatient(ctx, store, input({ body: withGuardian })))).toBe('ok')
    expect(store.events).toHaveLength(1)
  })

  it('replays as 404 when the patient has moved out of the token’s centers since', async () => {
    const store = new FakePatients()
    const ctx = testCtx(testPrincipal({ allowedCenters: ['ALM1'] }))
    const { body } = await createPatient(ctx, store, input({ idempotencyKey: 'k-1' }))
    store.seed(ctx.auth.companyId, { ...body, codalmacen: 'ALM2' })
    expect(await codeOf(createPatient(ctx, store, input({ idempotencyKey: 'k-1' })))).toBe('not_found')
  })
})
