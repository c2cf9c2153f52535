import type { Principal } from '@clinic/platform/core'
import { DEFAULT_CONSENT_DAYS, DEFAULT_TIME_ZONE, MAX_CONSENT_DAYS } from '../../src/domain/consent-rules'
import { requestConsent } from '../../src/domain/request-consent'
import type { CreateConsentInput } from '../../src/schemas/consent'
import { consentWorld } from '../consent-fakes'
import { NOW, codeOf, ctxOf, fakeId, loggingCtxOf, problemOf } from '../fakes'

const DAY = 86_400_000

/** requestConsent on the fakes: a patient of the company and a template (version 2) to ask for. */
function setup(principal: Partial<Principal> = {}) {
  const w = consentWorld()
  const { ctx, lines } = loggingCtxOf(principal)
  const company = ctx.auth.companyId
  const patient = w.patients.add(company, { language: 'es' })
  w.store.addTemplate(company, { text_sha256: '1'.repeat(64) })
  const latest = w.store.addTemplate(company, { text_sha256: '2'.repeat(64) })
  const ask = (
    body: Partial<CreateConsentInput> = {},
    o: { key?: string; hash?: string; queryCenter?: string; as?: typeof ctx } = {},
  ) =>
    requestConsent(o.as ?? ctx, w.deps, {
      body: { patient_id: patient, template_key: 'cataract-surgery', ...body },
      queryCenter: o.queryCenter,
      idempotencyKey: o.key,
      requestHash: o.hash ?? 'hash-1',
    })
  return { ...w, ctx, lines, company, patient, latest, ask }
}

describe('requestConsent', () => {
  it("freezes the latest version and its text hash, in the patient's language, for 7 days; consent.requested", async () => {
    const { ask, store, company, patient, latest, lines, ctx } = setup()
    const result = await ask()
    const { body } = result
    expect(body).toEqual({
      id: expect.any(String),
      patient_id: patient,
      template_key: 'cataract-surgery',
      language: 'es',
      template_version: 2,
      text_sha256: latest.text_sha256,
      signer_role: 'patient',
      status: 'pending',
      expires_at: new Date(NOW.getTime() + 7 * DAY).toISOString(),
      evidence: null,
      document_id: null,
      withdrawn_at: null,
      withdrawal_reason: null,
      appointment_id: null,
      exam_id: null,
      codalmacen: null,
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
      version: 1,
    })
    expect(DEFAULT_CONSENT_DAYS).toBe(7)
    const extras = store.extrasOf(company, body.id)
    expect(extras).toMatchObject({
      template_id: latest.id,
      clinic: { name: null, center: null, timeZone: 'Europe/Madrid' },
    })
    expect(result.replayed).toBeUndefined()
    expect(result).toMatchObject({
      patient: { id: patient },
      linkId: extras.link_id,
      clinic: { name: null, center: null, timeZone: DEFAULT_TIME_ZONE },
    })
    expect(store.events.map((e) => [e.type, e.subject, e.idempresa, e.actorname])).toEqual([
      ['consent.requested', body.id, company, ctx.auth.username],
    ])
    // Ids, template, role and status: never the text or a name.
    expect(store.events[0]!.data).toEqual({
      id: body.id,
      patient_id: patient,
      template_key: 'cataract-surgery',
      template_version: 2,
      text_sha256: latest.text_sha256,
      signer_role: 'patient',
      status: 'pending',
      version: 1,
      document_id: null,
    })
    expect(lines.map((l) => [l.msg, l.consent_id, l.replayed])).toEqual([
      ['consent requested', body.id, false],
    ])
  })

  it('asks the guardian of a patient who requires one', async () => {
    const { ask, patients, company } = setup()
    const minor = patients.add(company, { requires_legal_guardian: true })
    expect((await ask({ patient_id: minor })).body.signer_role).toBe('guardian')
  })

  it("the language asked for, else the patient's; 422 unknown_template for a key not in that language", async () => {
    const { ask, store, company, patients } = setup()
    const en = store.addTemplate(company, { language: 'en' })
    expect((await ask({ language: 'en' })).body).toMatchObject({
      language: 'en',
      template_version: en.version,
    })
    const english = patients.add(company, { language: 'en' })
    expect((await ask({ patient_id: english })).body.language).toBe('en')
    expect(await problemOf(ask({ language: 'ca' }))).toMatchObject({ status: 422, code: 'unknown_template' })
    expect(await codeOf(ask({ template_key: 'injection' }))).toBe('unknown_template')
    expect(await codeOf(ask({ template_key: 'cataract-surgery' }, { as: ctxOf() }))).toBe('unknown_patient')
    expect(store.events).toHaveLength(2)
  })

  it('expires when asked, later than now and at most 90 days from now (400 naming /expires_at)', async () => {
    const { ask, patients, store } = setup()
    const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString()
    expect((await ask({ expires_at: at(1) })).body.expires_at).toBe(at(1))
    expect((await ask({ expires_at: at(90 * DAY) })).body.expires_at).toBe(at(90 * DAY))
    expect(MAX_CONSENT_DAYS).toBe(90)
    for (const [expires_at, message] of [
      [at(0), 'must be in the future'],
      [at(-DAY), 'must be in the future'],
      ['not a date', 'must be in the future'],
      [at(90 * DAY + 1), 'must be at most 90 days from now'],
    ])
      expect(await problemOf(ask({ expires_at }))).toMatchObject({
        status: 400,
        code: 'validation_failed',
        errors: [{ path: '/expires_at', message }],
      })
    // Refused before any other service is asked.
    expect(patients.asked).toHaveLength(2)
    expect(store.events).toHaveLength(2)
  })

  it('its center, and the clinic and center names the gateway gives, frozen with it', async () => {
    const names = { company: 'Clínica Ñandú', centers: { ALM1: 'Centro Gràcia' } }
    const { ask, store, company } = setup({ names })
    const inCenter = await ask({ codalmacen: 'ALM1' })
    expect(inCenter.body.codalmacen).toBe('ALM1')
    expect(inCenter.clinic).toEqual({
      name: 'Clínica Ñandú',
      center: 'Centro Gràcia',
      timeZone: 'Europe/Madrid',
    })
    expect(store.extrasOf(company, inCenter.body.id).clinic).toEqual(inCenter.clinic)
    // A center the names do not know, and none at all: the company alone.
    expect((await ask({}, { queryCenter: 'ALM2' })).clinic).toEqual({ ...inCenter.clinic, center: null })
    expect((await ask()).clinic).toEqual({ ...inCenter.clinic, center: null })
    expect((await ask({ codalmacen: 'ALM2' }, { queryCenter: 'ALM1' })).body.codalmacen).toBe('ALM2')
  })

  it('a token limited to centers names one of them (400 /codalmacen), never another (403)', async () => {
    const { ask } = setup({ allowedCenters: ['ALM1'] })
    expect(await problemOf(ask())).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/codalmacen', message: 'is required for a token limited to centers' }],
    })
    expect(await codeOf(ask({ codalmacen: 'ALM2' }))).toBe('center_forbidden')
    expect(await codeOf(ask({}, { queryCenter: 'ALM9' }))).toBe('unknown_center')
    expect((await ask({}, { queryCenter: 'ALM1' })).body.codalmacen).toBe('ALM1')
  })

  it("takes an appointment and an exam of the patient's (ids in lower case), 422 for anyone else's", async () => {
    const { ask, appointments, exams, company, patient, patients } = setup()
    const appointment = appointments.add(company, patient)
    const exam = exams.add(company, patient)
    const { body } = await ask({
      patient_id: patient.toUpperCase(),
      appointment_id: appointment.toUpperCase(),
      exam_id: exam.toUpperCase(),
    })
    expect(body).toMatchObject({ patient_id: patient, appointment_id: appointment, exam_id: exam })
    expect(patients.asked).toEqual([patient])
    const sibling = patients.add(company)
    expect(await codeOf(ask({ appointment_id: appointments.add(company, sibling) }))).toBe(
      'unknown_appointment',
    )
    expect(await codeOf(ask({ exam_id: exams.add(company, sibling) }))).toBe('unknown_exam')
    expect(await codeOf(ask({ patient_id: fakeId() }))).toBe('unknown_patient')
  })

  it('an Idempotency-Key replays the first answer before anything else is checked; no patient, link or clinic', async () => {
    const { ask, store, at, patients } = setup()
    const first = await ask({ expires_at: new Date(NOW.getTime() + DAY).toISOString() }, { key: 'k' })
    at(2 * DAY)
    patients.down = true
    const again = await ask({ expires_at: new Date(NOW.getTime() + DAY).toISOString() }, { key: 'k' })
    expect(again).toEqual({
      body: first.body,
      replayed: true,
      patient: null,
      linkId: null,
      clinic: { name: null, center: null, timeZone: 'Europe/Madrid' },
    })
    expect(await codeOf(ask({}, { key: 'k', hash: 'hash-2' }))).toBe('idempotency_conflict')
    expect(store.events).toHaveLength(1)
  })
})
