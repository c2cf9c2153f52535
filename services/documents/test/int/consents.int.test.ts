import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import path from 'node:path'
import { injectAs, outboxOf, testPrincipal } from '@clinic/platform/testing'
import { ConsentsRepository } from '../../src/db/repositories/consents-repository'
import { ConsentExpiryWorker } from '../../src/jobs/expiry-worker'
import { startApp, type Harness } from '../helpers'
import { createLogger } from '@clinic/platform'

let now = new Date('2026-11-27T10:00:00Z')
const clock = () => now
let h: Harness
beforeAll(async () => {
  h = await startApp({ clock })
})
afterAll(() => h.close())

const BODY =
  'Se me ha explicado la cirugía de cataratas, sus riesgos y alternativas.\n\nAutorizo la intervención.'
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex')

/** The text of a PDF as a reader extracts it (pdf.js, in test/pdf-text.mjs). */
function pdfText(pdf: Buffer): string {
  const r = spawnSync(process.execPath, [path.join(__dirname, '../pdf-text.mjs')], {
    input: pdf,
    encoding: 'utf8',
    timeout: 30_000,
  })
  if (r.status !== 0) throw new Error(`pdf.js could not read the PDF: ${r.stderr}`)
  return r.stdout
}

async function template(as: ReturnType<typeof injectAs>, key = 'cataract-surgery', language = 'es') {
  const res = await as('POST', '/consents/templates', {
    key,
    language,
    title: 'Cirugía de cataratas',
    body: BODY,
  })
  expect(res.statusCode).toBe(201)
  return res.json()
}

const page = (url: string, o: { method?: 'GET' | 'POST'; form?: string; ua?: string } = {}) =>
  h.app.inject({
    method: o.method ?? 'GET',
    url,
    headers: {
      ...(o.form !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      'user-agent': o.ua ?? 'TestPhone/1.0',
      'x-forwarded-for': '203.0.113.7',
    },
    ...(o.form !== undefined ? { payload: o.form } : {}),
  })

describe('consent templates', () => {
  it('versions a key and language; each version keeps its text and hash', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    const v1 = await template(as)
    const v2 = await template(as)
    expect([v1.version, v2.version]).toEqual([1, 2])
    expect(v1.text_sha256).toBe(sha(BODY))
    expect((await as('GET', `/consents/templates/${v1.id}`)).json()).toMatchObject({ version: 1, body: BODY })
    expect((await as('GET', '/consents/templates?key=cataract-surgery')).json().meta.total).toBe(2)
    expect((await injectAs(h.app, testPrincipal())('GET', `/consents/templates/${v1.id}`)).statusCode).toBe(
      404,
    )
  })
})

describe('a consent through its link', () => {
  it('asks the guardian, shows the exact text, grants with evidence and a PDF, then refuses a second use', async () => {
    // The gateway's principal names the company and its centers (identity).
    const p = testPrincipal({
      names: { company: 'Clínica Ñandú', centers: { ALM1: 'Centro Gràcia', ALM2: 'Centro Sants' } },
    })
    const as = injectAs(h.app, p)
    const tpl = await template(as)
    const patient_id = h.far.patient(p.companyId, { requiresGuardian: true })
    const res = await as('POST', '/consents', {
      patient_id,
      template_key: 'cataract-surgery',
      codalmacen: 'ALM1',
    })
    expect(res.statusCode).toBe(201)
    const consent = res.json()
    expect(consent).toMatchObject({
      status: 'pending',
      signer_role: 'guardian',
      template_version: tpl.version,
      text_sha256: tpl.text_sha256,
      language: 'es',
      expires_at: '2026-12-04T10:00:00.000Z',
    })
    const link = h.far.linkTo(patient_id)
    // The message names who asks.
    const message = h.far.messages.filter((m) => m.body.patient_id === patient_id).at(-1)!.body
    expect(message.subject).toBe('Clínica Ñandú (Centro Gràcia): Cirugía de cataratas')
    expect(message.body).toMatch(/^Clínica Ñandú \(Centro Gràcia\) le pide su consentimiento informado/)

    const open = await page(link)
    expect(open.statusCode).toBe(200)
    expect(open.headers['content-security-policy']).toContain("default-src 'none'")
    expect(open.body).toContain(
      'Se me ha explicado la cirugía de cataratas, sus riesgos y alternativas.\n\nAutorizo la intervención.',
    )
    expect(open.body).toContain('<strong>Clínica Ñandú (Centro Gràcia)</strong>')
    expect(open.body).toContain('Usted firma como representante legal de Testa Ficticia.')
    expect(open.body).not.toMatch(/tutor|tutora/)
    expect(open.body).not.toContain('<script')

    const nameless = await page(link, { method: 'POST', form: 'answer=accept&name=' })
    expect(nameless.statusCode).toBe(422)
    const done = await page(link, {
      method: 'POST',
      form: 'answer=accept&name=Tutor%20Ficticio%20P%C3%A9rez',
    })
    expect(done.statusCode).toBe(200)
    expect(done.body).toContain('consentimiento ha quedado registrado')
    // What was answered, for whom and when (the center's time: 10:00 UTC is 11:00 in Madrid).
    expect(done.body).toContain(
      'Tutor Ficticio Pérez respondió «Acepto» a «Cirugía de cataratas» como representante legal de Testa Ficticia, el 27 de noviembre de 2026 a las 11:00:00 CET (Europe/Madrid).',
    )
    const pdfLink = /<a id="pdf" href="([^"]+)"/.exec(done.body)![1]!
    expect(pdfLink).toMatch(/^\/p\/c\/pdf\//)

    const granted = (await as('GET', `/consents/${consent.id}`)).json()
    expect(granted).toMatchObject({
      status: 'granted',
      evidence: {
        signer_role: 'guardian',
        signer_name: 'Tutor Ficticio Pérez',
        // On file as "Tutor Ficticio": a second surname typed still matches.
        signer_name_on_file: 'Tutor Ficticio',
        signer_name_matches: true,
        method: 'patient_link',
        ip: '203.0.113.7',
        user_agent: 'TestPhone/1.0',
        text_sha256: tpl.text_sha256,
        signed_at: now.toISOString(),
      },
    })
    const doc = (await as('GET', `/documents/${granted.document_id}`)).json()
    expect(doc).toMatchObject({ category: 'consent', content_type: 'application/pdf', patient_id })
    const pdf = (await as('GET', `/documents/${doc.id}/content`)).rawPayload
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-')
    const text = pdfText(pdf)
    expect(text).toContain('Tutor Ficticio Pérez')
    expect(text).toContain(tpl.text_sha256)
    expect(text).toContain('Autorizo la intervención.')
    expect(text).toContain('Clínica Ñandú')
    expect(text).toContain('Centro Gràcia')

    // The signed PDF from the page's link, for 24 hours.
    const fromPage = await page(pdfLink)
    expect(fromPage.statusCode).toBe(200)
    expect(fromPage.headers).toMatchObject({
      'content-type': 'application/pdf',
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-store',
    })
    expect(fromPage.headers['content-disposition']).toMatch(/^attachment; filename=".+\.pdf"/)
    expect(fromPage.rawPayload.equals(pdf)).toBe(true)
    now = new Date(now.getTime() + 24 * 3600_000 + 1000)
    try {
      expect((await page(pdfLink)).statusCode).toBe(410)
      expect((await page(`${pdfLink.slice(0, -3)}abc`)).statusCode).toBe(400)
      // A consent link is not a PDF link, nor the reverse.
      expect((await page(`/p/c/pdf/${link.slice('/p/c/'.length)}`)).statusCode).toBe(400)
    } finally {
      now = new Date('2026-11-27T10:00:00Z')
    }

    const again = await page(link, { method: 'POST', form: 'answer=decline' })
    expect(again.statusCode).toBe(410)
    expect((await page(link)).statusCode).toBe(410)
    const altered = await page(`${link.slice(0, -3)}abc`)
    expect(altered.statusCode).toBe(400)
    expect(altered.body).toContain('no es válido')

    const types = (await outboxOf(h.owner, p.companyId, consent.id)).map((r) => r.type)
    expect(types).toEqual([
      'consent.requested',
      'consent.link_viewed',
      'consent.granted',
      'consent.link_viewed', // the PDF from the page's link
      'consent.link_viewed',
    ])
    const viewed = (await outboxOf(h.owner, p.companyId, consent.id)).find(
      (r) => r.type === 'consent.link_viewed',
    )!
    expect(viewed.payload).toMatchObject({ actorname: 'patient-link' })

    // Withdrawal keeps the history.
    const pending = await as('POST', `/consents/${consent.id}/withdraw`, {
      reason: 'cambia de opinión',
      signer_name: 'Tutor Ficticio',
    })
    expect(pending.json()).toMatchObject({
      status: 'withdrawn',
      withdrawal_reason: 'cambia de opinión',
      evidence: { signer_name: 'Tutor Ficticio Pérez' },
    })
    const twice = await as('POST', `/consents/${consent.id}/withdraw`, { reason: 'x', signer_name: 'y' })
    expect(twice.json()).toMatchObject({ status: 409, code: 'invalid_transition' })
  })

  it('keeps a refusal; asks the patient when no guardian is required; 422 unknown_template; 409 withdrawing a pending one', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as, 'injection', 'en')
    const patient_id = h.far.patient(p.companyId)
    expect((await as('POST', '/consents', { patient_id, template_key: 'nope' })).json()).toMatchObject({
      status: 422,
      code: 'unknown_template',
    })
    const consent = (
      await as('POST', '/consents', { patient_id, template_key: 'injection', language: 'en' })
    ).json()
    expect(consent.signer_role).toBe('patient')
    expect(
      (await as('POST', `/consents/${consent.id}/withdraw`, { reason: 'x', signer_name: 'y' })).statusCode,
    ).toBe(409)
    const link = h.far.linkTo(patient_id)
    const open = await page(link)
    expect(open.body).toContain('on your own behalf')
    const declined = await page(link, { method: 'POST', form: 'answer=decline' })
    expect(declined.body).toContain('you do not accept')
    expect((await as('GET', `/consents/${consent.id}`)).json()).toMatchObject({
      status: 'refused',
      document_id: null,
    })
    expect((await as('GET', '/consents?status=refused')).json().meta.total).toBe(1)
  })

  it('records an in-person grant with its witness, and expires an unanswered one through the job queue', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as)
    const patient_id = h.far.patient(p.companyId)
    const inPerson = (
      await as('POST', '/consents', { patient_id, template_key: 'cataract-surgery', send: false })
    ).json()
    const granted = await as('POST', `/consents/${inPerson.id}/grant`, {
      signer_role: 'patient',
      signer_name: 'Testa Ficticia',
      witness: 'Enfermera Ficticia',
    })
    expect(granted.json()).toMatchObject({
      status: 'granted',
      evidence: { method: 'in_person', witness: 'Enfermera Ficticia' },
    })

    const later = (
      await as('POST', '/consents', {
        patient_id,
        template_key: 'cataract-surgery',
        expires_at: '2026-11-28T10:00:00Z',
      })
    ).json()
    const link = h.far.linkTo(patient_id)
    const worker = new ConsentExpiryWorker({
      store: new ConsentsRepository(h.knex),
      clock,
      log: createLogger({ service: 'documents', level: 'silent' }),
      pollMs: 60_000,
    }).start()
    try {
      await worker.idle()
      expect((await as('GET', `/consents/${later.id}`)).json().status).toBe('pending')
      now = new Date('2026-11-28T10:00:01Z')
      worker.wake()
      await worker.idle()
      expect((await as('GET', `/consents/${later.id}`)).json().status).toBe('expired')
      expect((await outboxOf(h.owner, p.companyId, later.id)).map((r) => r.type)).toContain('consent.expired')
      const expired = await page(link)
      expect(expired.statusCode).toBe(410)
      expect(expired.body).toContain('caducado')
    } finally {
      await worker.stop()
      now = new Date('2026-11-27T10:00:00Z')
    }
  })
})

describe('what a consent takes', () => {
  it("422 signer_mismatch for an in-person grant by another role than the consent's; it stays pending", async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as)
    const minor = h.far.patient(p.companyId, { requiresGuardian: true })
    const consent = (
      await as('POST', '/consents', { patient_id: minor, template_key: 'cataract-surgery', send: false })
    ).json()
    expect(consent.signer_role).toBe('guardian')
    const res = await as('POST', `/consents/${consent.id}/grant`, {
      signer_role: 'patient',
      signer_name: 'Rob Kid',
      witness: 'Enfermera Ficticia',
    })
    expect(res.statusCode).toBe(422)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(res.json()).toMatchObject({ code: 'signer_mismatch' })
    expect((await as('GET', `/consents/${consent.id}`)).json()).toMatchObject({
      status: 'pending',
      evidence: null,
      document_id: null,
    })
    expect((await as('GET', `/documents?patient_id=${minor}`)).json().meta.total).toBe(0)
    const right = await as('POST', `/consents/${consent.id}/grant`, {
      signer_role: 'guardian',
      signer_name: 'Tutor Ficticio',
      witness: 'Enfermera Ficticia',
    })
    expect(right.json()).toMatchObject({ status: 'granted', evidence: { signer_role: 'guardian' } })
  })

  it('expires within 90 days at most: beyond is 400 validation_failed naming /expires_at', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as)
    const patient_id = h.far.patient(p.companyId)
    const ask = (expires_at: string) =>
      as('POST', '/consents', { patient_id, template_key: 'cataract-surgery', send: false, expires_at })
    for (const far of ['2099-01-01T00:00:00Z', '2027-02-25T10:00:00.001Z']) {
      const res = await ask(far)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: '/expires_at' }] })
    }
    // Exactly 90 days from now is the most.
    expect((await ask('2027-02-25T10:00:00Z')).json()).toMatchObject({
      status: 'pending',
      expires_at: '2027-02-25T10:00:00.000Z',
    })
    expect((await as('GET', '/consents')).json().meta.total).toBe(1)
  })
})

describe('who signs', () => {
  it('keeps a typed name that is not the one on file, and says so: staff see the mismatch', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as)
    const minor = h.far.patient(p.companyId, { requiresGuardian: true })
    const consent = (
      await as('POST', '/consents', { patient_id: minor, template_key: 'cataract-surgery' })
    ).json()
    const done = await page(h.far.linkTo(minor), {
      method: 'POST',
      form: 'answer=accept&name=Pepe+Desconocido',
    })
    expect(done.statusCode).toBe(200)
    const granted = (await as('GET', `/consents/${consent.id}`)).json()
    expect(granted.evidence).toMatchObject({
      signer_name: 'Pepe Desconocido',
      signer_name_on_file: 'Tutor Ficticio',
      signer_name_matches: false,
    })
    // No names in the principal: the page and the PDF say "the clinic".
    expect(done.body).toContain('<strong>La clínica</strong>')
  })

  it('in person: the name on file beside the one given', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    await template(as)
    const patient_id = h.far.patient(p.companyId)
    const consent = (
      await as('POST', '/consents', { patient_id, template_key: 'cataract-surgery', send: false })
    ).json()
    const granted = await as('POST', `/consents/${consent.id}/grant`, {
      signer_role: 'patient',
      signer_name: 'TESTA  ficticia',
      witness: 'Enfermera Ficticia',
    })
    expect(granted.json().evidence).toMatchObject({
      signer_name: 'TESTA  ficticia',
      signer_name_on_file: 'Testa Ficticia',
      signer_name_matches: true,
    })
  })
})
