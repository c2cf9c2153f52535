import { gatewayHeaders, injectAs, testPrincipal } from '@clinic/platform/testing'
import type { Principal } from '@clinic/platform'
import { multipart, pdf, startApp, upload, type Harness } from '../helpers'

/**
 * The signed consent's PDF, a scanned form a consent points to, and any document of category
 * `consent` are evidence (DESIGN.md section 16): DELETE is 409 document_in_use and the bytes stay,
 * whatever the token (a center-limited one included).
 */
let h: Harness
beforeAll(async () => {
  h = await startApp({ clock: () => new Date('2026-11-27T10:00:00Z') })
})
afterAll(() => h.close())

const del = async (p: Principal, id: string) =>
  h.app.inject({
    method: 'DELETE',
    url: `/documents/${id}`,
    headers: await gatewayHeaders(p, 'DELETE', `/documents/${id}`),
  })

async function stillThere(p: Principal, id: string, bytes?: Buffer) {
  const as = injectAs(h.app, p)
  expect((await as('GET', `/documents/${id}`)).json()).toMatchObject({ status: 'available' })
  const content = await as('GET', `/documents/${id}/content`)
  expect(content.statusCode).toBe(200)
  if (bytes) expect(content.rawPayload.equals(bytes)).toBe(true)
  return content.rawPayload
}

async function grantedConsent(p: Principal, o: { documentId?: string; patientId?: string } = {}) {
  const as = injectAs(h.app, p)
  await as('POST', '/consents/templates', {
    key: 'k',
    language: 'es',
    title: 'T',
    body: 'Texto.',
    codalmacen: 'ALM1',
  })
  const patient_id = o.patientId ?? h.far.patient(p.companyId)
  const consent = (
    await as('POST', '/consents', { patient_id, template_key: 'k', send: false, codalmacen: 'ALM1' })
  ).json()
  const granted = await as('POST', `/consents/${consent.id}/grant`, {
    signer_role: 'patient',
    signer_name: 'Testa Ficticia',
    witness: 'Enfermera Ficticia',
    ...(o.documentId ? { document_id: o.documentId } : {}),
  })
  expect(granted.statusCode).toBe(200)
  return granted.json() as { id: string; document_id: string }
}

describe('DELETE of evidence', () => {
  it("refuses the signed consent's PDF (409 document_in_use), to a center-limited token too; its bytes stay", async () => {
    const p = testPrincipal()
    const consent = await grantedConsent(p)
    const bytes = await stillThere(p, consent.document_id)
    for (const who of [p, { ...p, allowedCenters: ['ALM1'] }]) {
      const res = await del(who, consent.document_id)
      expect(res.statusCode).toBe(409)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(res.json()).toMatchObject({ code: 'document_in_use' })
    }
    await stillThere(p, consent.document_id, bytes)
    expect((await injectAs(h.app, p)('GET', `/consents/${consent.id}`)).json()).toMatchObject({
      status: 'granted',
      document_id: consent.document_id,
    })
  })

  it('refuses a scanned form attached to an in-person grant, even after its category was changed', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const bytes = pdf(100)
    const scan = (
      await upload(h.app, p, multipart({ patient_id, category: 'consent', codalmacen: 'ALM1' }, { bytes }))
    ).json()
    await grantedConsent(p, { documentId: scan.id, patientId: patient_id })
    const recategorised = await injectAs(h.app, p)('PATCH', `/documents/${scan.id}`, { category: 'other' })
    expect(recategorised.json()).toMatchObject({ status: 409, code: 'document_in_use' })
    expect((await del(p, scan.id)).json()).toMatchObject({ status: 409, code: 'document_in_use' })
    await stillThere(p, scan.id, bytes)
  })

  it('refuses any document of category consent, and keeps bytes it shares with a deleted one', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const bytes = pdf(200)
    const form = (await upload(h.app, p, multipart({ patient_id, category: 'consent' }, { bytes }))).json()
    const copy = (await upload(h.app, p, multipart({ patient_id, category: 'report' }, { bytes }))).json()
    expect((await del(p, form.id)).json()).toMatchObject({ status: 409, code: 'document_in_use' })
    expect((await del(p, copy.id)).statusCode).toBe(204)
    await stillThere(p, form.id, bytes)
  })
})
