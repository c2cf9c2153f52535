import { uuidv7, type Principal } from '@clinic/platform'
import { fhirProblems, gatewayHeaders, injectAs, testPrincipal } from '@clinic/platform/testing'
import { DOCUMENT_CATEGORY_SYSTEM } from '../../src/domain/fhir-documents'
import { multipart, pdf, png, startApp, upload, type Harness } from '../helpers'

/**
 * FHIR R4 DocumentReference, Binary and Consent (DESIGN.md section 19, README "FHIR"): read and
 * search as the gateway forwards them, every declared parameter, paging by `next`, centers and
 * companies, OperationOutcome errors; every resource and Bundle through both validators.
 */

/** The FHIR base the gateway names (FHIR_BASE_HEADER): Bundles' fullUrls and links start with it. */
const BASE = 'http://clinic.test/api/fhir/R4'
const FHIR_JSON = /^application\/fhir\+json/

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** A GET as the gateway forwards it under /fhir/R4 (the path, or a link of a Bundle). */
const fhir = (p: Principal, url: string, headers: Record<string, string> = {}) =>
  injectAs(h.app, p)('GET', url.startsWith(BASE) ? `/fhir/R4${url.slice(BASE.length)}` : url, undefined, {
    'x-clinic-fhir-base': BASE,
    ...headers,
  })

const valid = (resource: Json) => expect(fhirProblems(resource)).toEqual([])

/** A search's Bundle, checked: 200, FHIR JSON, valid; its ids in order. */
async function search(p: Principal, url: string) {
  const res = await fhir(p, url)
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(FHIR_JSON)
  const bundle = res.json() as Json
  expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset' })
  valid(bundle)
  return { bundle, ids: (bundle.entry ?? []).map((e: Json) => e.resource.id as string) }
}

/** Every page of a search, following `next` until none: the ids in order, and how many pages. */
async function everyPage(p: Principal, url: string) {
  const ids: string[] = []
  const times: string[] = []
  let next: string | undefined = url
  let pages = 0
  let total: number | undefined
  while (next) {
    const { bundle } = await search(p, next)
    total ??= bundle.total
    expect(bundle.total).toBe(total)
    for (const e of bundle.entry ?? []) {
      ids.push(e.resource.id)
      times.push(e.resource.meta.lastUpdated)
    }
    next = bundle.link.find((l: Json) => l.relation === 'next')?.url
    pages++
    expect(pages).toBeLessThan(50)
  }
  return { ids, times, pages, total }
}

async function expectOutcome(res: { statusCode: number; headers: Json; json(): Json }, status: number) {
  expect(res.statusCode).toBe(status)
  expect(res.headers['content-type']).toMatch(FHIR_JSON)
  const outcome = res.json()
  expect(outcome.resourceType).toBe('OperationOutcome')
  valid(outcome)
  return outcome
}

const sorted = (ids: string[]) => [...ids].sort()

async function uploaded(p: Principal, fields: Record<string, string>, bytes: Buffer) {
  const res = await upload(h.app, p, multipart(fields, { bytes, filename: 'scan.bin' }))
  expect(res.statusCode).toBe(201)
  return res.json() as Json
}

/** The world: company A's documents and consents in ALM1, ALM2 and none; company B's. */
const p = testPrincipal()
const other = testPrincipal()
const alm2Only = { ...p, allowedCenters: ['ALM2'] }
const w = {} as {
  pat1: string
  pat2: string
  exam: string
  appointment: string
  referralBytes: Buffer
  referral: Json
  imaging: Json
  old: Json
  deleted: Json
  centerless: Json
  form: Json
  pending: Json
  granted: Json
  withdrawn: Json
  refused: Json
  expired: Json
  alm2Consent: Json
  otherDocument: Json
  otherConsent: Json
}

beforeAll(async () => {
  const as = injectAs(h.app, p)
  w.pat1 = h.far.patient(p.companyId)
  w.pat2 = h.far.patient(p.companyId)
  w.exam = h.far.exam(p.companyId, w.pat1)
  w.appointment = h.far.appointment(p.companyId, w.pat1)
  w.referralBytes = pdf(300_000)
  w.referral = await uploaded(
    p,
    {
      patient_id: w.pat1,
      category: 'referral',
      title: 'Volante',
      codalmacen: 'ALM1',
      exam_id: w.exam,
      appointment_id: w.appointment,
    },
    w.referralBytes,
  )
  w.imaging = await uploaded(p, { patient_id: w.pat1, category: 'imaging', codalmacen: 'ALM2' }, png())
  w.old = await uploaded(p, { patient_id: w.pat2, category: 'report', codalmacen: 'ALM1' }, pdf(10))
  // Added in March 2025, last changed the day after (as the owner: the API sets its own times).
  await h
    .owner('documents')
    .where({ idempresa: p.companyId, id: w.old.id })
    .update({ created_at: '2025-03-10T10:00:00Z', updated_at: '2025-03-11T09:30:00Z' })
  w.deleted = await uploaded(p, { patient_id: w.pat2, category: 'other', codalmacen: 'ALM1' }, pdf(20))
  const del = await h.app.inject({
    method: 'DELETE',
    url: `/documents/${w.deleted.id}`,
    headers: await gatewayHeaders(p, 'DELETE', `/documents/${w.deleted.id}`),
  })
  expect(del.statusCode).toBe(204)
  w.centerless = await uploaded(p, { patient_id: w.pat2, category: 'identity' }, png(10))
  w.form = await uploaded(p, { patient_id: w.pat1, category: 'consent', codalmacen: 'ALM1' }, pdf(30))

  const tpl = await as('POST', '/consents/templates', {
    key: 'cataract-surgery',
    language: 'es',
    title: 'Cirugía de cataratas',
    body: 'Autorizo la intervención.',
  })
  expect(tpl.statusCode).toBe(201)
  const ask = async (who: Principal, patient_id: string, o: Record<string, unknown> = {}) => {
    const res = await injectAs(h.app, who)('POST', '/consents', {
      patient_id,
      template_key: 'cataract-surgery',
      codalmacen: 'ALM1',
      send: false,
      ...o,
    })
    expect(res.statusCode).toBe(201)
    return res.json() as Json
  }
  const grant = async (c: Json) => {
    const res = await as('POST', `/consents/${c.id}/grant`, {
      signer_role: 'patient',
      signer_name: 'Testa Ficticia',
      witness: 'Enfermera Ficticia',
      document_id: w.form.id,
    })
    expect(res.statusCode).toBe(200)
    return res.json() as Json
  }
  w.pending = await ask(p, w.pat1)
  w.granted = await grant(await ask(p, w.pat1))
  await grant(await ask(p, w.pat1)).then(async (c) => {
    const res = await as('POST', `/consents/${c.id}/withdraw`, {
      reason: 'cambia de opinión',
      signer_name: 'x',
    })
    expect(res.statusCode).toBe(200)
    w.withdrawn = res.json()
  })
  // Refused through its link (sent to the patient).
  const toRefuse = await ask(p, w.pat2, { send: true })
  const refused = await h.app.inject({
    method: 'POST',
    url: h.far.linkTo(w.pat2),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'answer=decline&name=Testa%20Ficticia',
  })
  expect(refused.statusCode).toBe(200)
  w.refused = (await as('GET', `/consents/${toRefuse.id}`)).json()
  expect(w.refused.status).toBe('refused')
  w.expired = await ask(p, w.pat2)
  await h
    .owner('consents')
    .where({ idempresa: p.companyId, id: w.expired.id })
    .update({ status: 'expired', updated_at: new Date(), version: 2 })
  w.alm2Consent = await ask(p, w.pat2, { codalmacen: 'ALM2' })

  const otherPatient = h.far.patient(other.companyId)
  w.otherDocument = await uploaded(
    other,
    { patient_id: otherPatient, category: 'referral', codalmacen: 'ALM1' },
    pdf(5),
  )
  await injectAs(h.app, other)('POST', '/consents/templates', {
    key: 'cataract-surgery',
    language: 'es',
    title: 'x',
    body: 'y',
  })
  w.otherConsent = await ask(other, otherPatient)
}, 60_000)

const allDocuments = () => [w.referral, w.imaging, w.old, w.deleted, w.centerless, w.form].map((d) => d.id)
const allConsents = () =>
  [w.pending, w.granted, w.withdrawn, w.refused, w.expired, w.alm2Consent].map((c) => c.id)

describe('DocumentReference', () => {
  it('reads a document: status, category, subject, date, the attachment at Binary/<id>, exam and appointment', async () => {
    const res = await fhir(p, `/fhir/R4/DocumentReference/${w.referral.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    expect(res.headers.etag).toBe('W/"1"')
    const doc = res.json()
    valid(doc)
    expect(doc).toEqual({
      resourceType: 'DocumentReference',
      id: w.referral.id,
      meta: { versionId: '1', lastUpdated: w.referral.updated_at },
      status: 'current',
      category: [
        { coding: [{ system: DOCUMENT_CATEGORY_SYSTEM, code: 'referral', display: 'Referral letter' }] },
      ],
      subject: { reference: `Patient/${w.pat1}` },
      date: w.referral.created_at,
      custodian: { reference: `Organization/${p.companyId}` },
      description: 'Volante',
      content: [
        {
          attachment: {
            contentType: 'application/pdf',
            url: `Binary/${w.referral.id}`,
            size: w.referralBytes.length,
            title: 'Volante',
            creation: w.referral.created_at,
          },
        },
      ],
      context: {
        encounter: [{ reference: `Encounter/${w.exam}` }],
        related: [{ reference: `Appointment/${w.appointment}` }],
      },
    })
    // No hash: R4's attachment.hash is SHA-1, and we keep SHA-256 only.
    expect(doc.content[0].attachment.hash).toBeUndefined()
  })

  it('shows a deleted document as entered-in-error (its metadata stays), titled by its file name', async () => {
    const res = await fhir(p, `/fhir/R4/DocumentReference/${w.deleted.id}`)
    const doc = res.json()
    valid(doc)
    expect(doc).toMatchObject({ status: 'entered-in-error', meta: { versionId: '2' } })
    expect(doc.content[0].attachment.title).toBe('scan.pdf')
    expect(doc.description).toBeUndefined()
    expect(doc.context).toBeUndefined()
  })

  it('404 OperationOutcome for an unknown id, an id that is no UUID, and another company’s', async () => {
    for (const id of [uuidv7(), 'not-a-uuid', w.otherDocument.id]) {
      const outcome = await expectOutcome(await fhir(p, `/fhir/R4/DocumentReference/${id}`), 404)
      expect(outcome.issue[0].code).toBe('not-found')
    }
  })

  it('searches by patient (reference or bare id; alternatives OR), every document of the company otherwise', async () => {
    const all = await search(p, '/fhir/R4/DocumentReference')
    expect(sorted(all.ids)).toEqual(sorted(allDocuments()))
    expect(all.bundle.total).toBe(6)
    expect(all.bundle.link).toEqual([{ relation: 'self', url: `${BASE}/DocumentReference` }])
    expect(all.bundle.entry[0].fullUrl).toBe(`${BASE}/DocumentReference/${all.ids[0]}`)
    const pat1 = [w.referral.id, w.imaging.id, w.form.id]
    expect(sorted((await search(p, `/fhir/R4/DocumentReference?patient=Patient/${w.pat1}`)).ids)).toEqual(
      sorted(pat1),
    )
    expect(sorted((await search(p, `/fhir/R4/DocumentReference?patient=${w.pat1}`)).ids)).toEqual(
      sorted(pat1),
    )
    expect(
      sorted((await search(p, `/fhir/R4/DocumentReference?patient=${w.pat1},Patient/${w.pat2}`)).ids),
    ).toEqual(sorted(allDocuments()))
    // Both must hold: no document is of two patients.
    expect(
      (await search(p, `/fhir/R4/DocumentReference?patient=${w.pat1}&patient=${w.pat2}`)).bundle.total,
    ).toBe(0)
    expect((await search(p, `/fhir/R4/DocumentReference?patient=${uuidv7()}`)).ids).toEqual([])
    expect((await search(p, `/fhir/R4/DocumentReference?patient=someone`)).ids).toEqual([])
  })

  it('searches by category (our system or none), by date added, _id and _lastUpdated', async () => {
    const ids = async (query: string) => sorted((await search(p, `/fhir/R4/DocumentReference?${query}`)).ids)
    expect(await ids('category=referral')).toEqual([w.referral.id])
    expect(await ids(`category=${encodeURIComponent(`${DOCUMENT_CATEGORY_SYSTEM}|imaging`)}`)).toEqual([
      w.imaging.id,
    ])
    expect(await ids(`category=imaging,referral`)).toEqual(sorted([w.imaging.id, w.referral.id]))
    expect(await ids(`category=imaging&category=referral`)).toEqual([])
    expect(await ids(`category=${encodeURIComponent('http://loinc.org|imaging')}`)).toEqual([])
    expect(await ids(`category=x-ray`)).toEqual([])
    expect(await ids(`category=report&patient=${w.pat2}`)).toEqual([w.old.id])
    // date: when the document was added (created_at), at any precision, with prefixes.
    expect(await ids('date=2025-03')).toEqual([w.old.id])
    expect(await ids('date=2025-03-10T10:00:00Z')).toEqual([w.old.id])
    expect(await ids('date=lt2026-01-01')).toEqual([w.old.id])
    expect(await ids('date=ge2026-01-01')).toEqual(sorted(allDocuments().filter((id) => id !== w.old.id)))
    expect(await ids('date=gt2025-03-10&date=lt2025-03-11')).toEqual([])
    // _lastUpdated: meta.lastUpdated (updated_at).
    expect(await ids('_lastUpdated=2025-03-11')).toEqual([w.old.id])
    expect(await ids('_lastUpdated=le2025-03-11T09:30:00Z')).toEqual([w.old.id])
    expect(await ids('_lastUpdated=gt2025-03-11T09:30:00Z')).toEqual(
      sorted(allDocuments().filter((id) => id !== w.old.id)),
    )
    expect(await ids(`_id=${w.old.id},${w.imaging.id},nonsense`)).toEqual(sorted([w.old.id, w.imaging.id]))
    expect(await ids(`_id=${w.otherDocument.id}`)).toEqual([])
  })

  it('pages by next links with a small _count, in either order, each document once', async () => {
    const asc = await everyPage(p, '/fhir/R4/DocumentReference?_count=2')
    expect(asc.pages).toBe(3)
    expect(asc.total).toBe(6)
    expect(new Set(asc.ids).size).toBe(asc.ids.length)
    expect(sorted(asc.ids)).toEqual(sorted(allDocuments()))
    expect(asc.times).toEqual([...asc.times].sort())
    expect(asc.ids[0]).toBe(w.old.id)
    const desc = await everyPage(p, '/fhir/R4/DocumentReference?_count=4&_sort=-_lastUpdated')
    expect(desc.pages).toBe(2)
    expect(desc.ids).toEqual([...asc.ids].reverse())
    expect(desc.times).toEqual([...desc.times].sort().reverse())
    // _count=0: the total alone.
    const count = await search(p, '/fhir/R4/DocumentReference?_count=0&patient=' + w.pat1)
    expect(count.bundle.total).toBe(3)
    expect(count.ids).toEqual([])
  })

  it('400 OperationOutcome for a parameter it does not take (never ignored), or a value of the wrong form', async () => {
    for (const query of [
      'status=current',
      'subject=Patient/x',
      'patient:missing=true',
      'date=yesterday',
      '_sort=date',
    ])
      await expectOutcome(await fhir(p, `/fhir/R4/DocumentReference?${query}`), 400)
    const outcome = await expectOutcome(await fhir(p, '/fhir/R4/DocumentReference?foo=bar'), 400)
    expect(outcome.issue[0].details.text).toMatch(/^foo is not a search parameter of DocumentReference/)
  })
})

describe('Binary', () => {
  it('reads the bytes as a download answers them: the type, the headers, Range', async () => {
    const res = await fhir(p, `/fhir/R4/Binary/${w.referral.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.rawPayload.equals(w.referralBytes)).toBe(true)
    expect(res.headers).toMatchObject({
      'content-type': 'application/pdf',
      'content-length': String(w.referralBytes.length),
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
      'cache-control': 'private, no-store',
      etag: `"${w.referral.sha256}"`,
      'content-disposition': `attachment; filename="scan.pdf"; filename*=UTF-8''scan.pdf`,
    })
    // Asked for the bytes in general (any JSON but FHIR's is not FHIR's): the bytes.
    const plain = await fhir(p, `/fhir/R4/Binary/${w.imaging.id}`, { accept: 'application/json, */*' })
    expect(plain.headers['content-type']).toBe('image/png')
    expect(plain.rawPayload.equals(png())).toBe(true)
    const part = await fhir(p, `/fhir/R4/Binary/${w.referral.id}`, { range: 'bytes=262140-262150' })
    expect(part.statusCode).toBe(206)
    expect(part.headers['content-range']).toBe(`bytes 262140-262150/${w.referralBytes.length}`)
    expect(part.rawPayload.equals(w.referralBytes.subarray(262140, 262151))).toBe(true)
  })

  it('reads a Binary resource with the bytes as data when asked for application/fhir+json (or _format)', async () => {
    for (const [url, headers] of [
      [`/fhir/R4/Binary/${w.referral.id}`, { accept: 'application/fhir+json' }],
      [`/fhir/R4/Binary/${w.referral.id}?_format=json`, {}],
    ] as const) {
      const res = await fhir(p, url, headers)
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toMatch(FHIR_JSON)
      const binary = res.json()
      valid(binary)
      expect(binary).toMatchObject({
        resourceType: 'Binary',
        id: w.referral.id,
        meta: { versionId: '1', lastUpdated: w.referral.updated_at },
        contentType: 'application/pdf',
        securityContext: { reference: `DocumentReference/${w.referral.id}` },
      })
      expect(Buffer.from(binary.data, 'base64').equals(w.referralBytes)).toBe(true)
    }
  })

  it('404 OperationOutcome for an unknown id, no UUID, another company’s; 410 for a deleted document', async () => {
    for (const id of [uuidv7(), 'not-a-uuid', w.otherDocument.id]) {
      await expectOutcome(await fhir(p, `/fhir/R4/Binary/${id}`), 404)
      await expectOutcome(await fhir(p, `/fhir/R4/Binary/${id}`, { accept: 'application/fhir+json' }), 404)
    }
    const gone = await expectOutcome(await fhir(p, `/fhir/R4/Binary/${w.deleted.id}`), 410)
    expect(gone.issue[0].code).toBe('deleted')
  })

  it('searches the documents whose bytes are held, without the bytes: _id, _lastUpdated, paging', async () => {
    const all = await search(p, '/fhir/R4/Binary')
    const held = allDocuments().filter((id) => id !== w.deleted.id)
    expect(sorted(all.ids)).toEqual(sorted(held))
    for (const e of all.bundle.entry) {
      expect(e.resource.data).toBeUndefined()
      expect(e.resource.securityContext).toEqual({ reference: `DocumentReference/${e.resource.id}` })
    }
    expect((await search(p, `/fhir/R4/Binary?_id=${w.referral.id},${w.deleted.id}`)).ids).toEqual([
      w.referral.id,
    ])
    expect((await search(p, '/fhir/R4/Binary?_lastUpdated=lt2026-01-01')).ids).toEqual([w.old.id])
    const pages = await everyPage(p, '/fhir/R4/Binary?_count=2&_sort=-_lastUpdated')
    expect(pages.pages).toBe(3)
    expect(new Set(pages.ids).size).toBe(held.length)
    expect(pages.times).toEqual([...pages.times].sort().reverse())
    for (const query of ['patient=' + w.pat1, 'category=referral', 'date=2025'])
      await expectOutcome(await fhir(p, `/fhir/R4/Binary?${query}`), 400)
  })
})

describe('Consent', () => {
  it('reads a granted consent: active, treatment, LOINC 59284-0, the signer, the form as sourceReference', async () => {
    const res = await fhir(p, `/fhir/R4/Consent/${w.granted.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    const consent = res.json()
    valid(consent)
    expect(consent).toEqual({
      resourceType: 'Consent',
      id: w.granted.id,
      meta: { versionId: String(w.granted.version), lastUpdated: w.granted.updated_at },
      status: 'active',
      scope: {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/consentscope',
            code: 'treatment',
            display: 'Treatment',
          },
        ],
      },
      category: [{ coding: [{ system: 'http://loinc.org', code: '59284-0', display: 'Consent Document' }] }],
      patient: { reference: `Patient/${w.pat1}` },
      dateTime: w.granted.evidence.signed_at,
      performer: [{ reference: `Patient/${w.pat1}`, display: 'Testa Ficticia' }],
      organization: [{ reference: `Organization/${p.companyId}` }],
      sourceReference: { reference: `DocumentReference/${w.form.id}` },
      policyRule: {
        coding: [
          { system: 'https://clinic.example/fhir/CodeSystem/consent-template', code: 'cataract-surgery' },
        ],
        text: `cataract-surgery version 1 (es), text SHA-256 ${w.granted.text_sha256}`,
      },
      provision: { type: 'permit', period: { start: w.granted.evidence.signed_at } },
    })
  })

  it('maps each of our states: pending proposed, refused rejected, withdrawn and expired inactive', async () => {
    const read = async (c: Json) => {
      const res = await fhir(p, `/fhir/R4/Consent/${c.id}`)
      valid(res.json())
      return res.json()
    }
    const pending = await read(w.pending)
    expect(pending).toMatchObject({ status: 'proposed', dateTime: w.pending.created_at })
    expect(pending.performer).toEqual([{ reference: `Patient/${w.pat1}` }])
    expect(pending.sourceReference).toBeUndefined()
    expect(pending.provision).toBeUndefined()
    expect(await read(w.refused)).toMatchObject({
      status: 'rejected',
      dateTime: w.refused.evidence.signed_at,
      performer: [{ reference: `Patient/${w.pat2}`, display: 'Testa Ficticia' }],
    })
    expect(await read(w.withdrawn)).toMatchObject({
      status: 'inactive',
      provision: {
        type: 'permit',
        period: { start: w.withdrawn.evidence.signed_at, end: w.withdrawn.withdrawn_at },
      },
    })
    expect(await read(w.expired)).toMatchObject({ status: 'inactive', meta: { versionId: '2' } })
  })

  it('404 OperationOutcome for an unknown id, an id that is no UUID, and another company’s', async () => {
    for (const id of [uuidv7(), 'nope', w.otherConsent.id])
      await expectOutcome(await fhir(p, `/fhir/R4/Consent/${id}`), 404)
  })

  it('searches by patient and status (ConsentState, its system or none; alternatives OR), pages', async () => {
    const ids = async (query: string) => sorted((await search(p, `/fhir/R4/Consent?${query}`)).ids)
    expect(await ids('')).toEqual(sorted(allConsents()))
    expect(await ids(`patient=Patient/${w.pat1}`)).toEqual(
      sorted([w.pending.id, w.granted.id, w.withdrawn.id]),
    )
    expect(await ids('status=proposed')).toEqual(sorted([w.pending.id, w.alm2Consent.id]))
    expect(await ids('status=active')).toEqual([w.granted.id])
    expect(
      await ids(`status=${encodeURIComponent('http://hl7.org/fhir/consent-state-codes|rejected')}`),
    ).toEqual([w.refused.id])
    expect(await ids('status=inactive')).toEqual(sorted([w.withdrawn.id, w.expired.id]))
    expect(await ids('status=active,rejected')).toEqual(sorted([w.granted.id, w.refused.id]))
    expect(await ids('status=active&status=rejected')).toEqual([])
    expect(await ids('status=draft')).toEqual([])
    expect(await ids(`status=${encodeURIComponent('http://example.org|active')}`)).toEqual([])
    expect(await ids(`status=inactive&patient=${w.pat2}`)).toEqual([w.expired.id])
    expect(await ids(`_id=${w.granted.id},${w.otherConsent.id}`)).toEqual([w.granted.id])
    expect(await ids('_lastUpdated=lt2026-01-01')).toEqual([])
    const pages = await everyPage(p, '/fhir/R4/Consent?_count=4&_sort=-_lastUpdated')
    expect(pages.pages).toBe(2)
    expect(sorted(pages.ids)).toEqual(sorted(allConsents()))
    expect(new Set(pages.ids).size).toBe(6)
    expect(pages.times).toEqual([...pages.times].sort().reverse())
    for (const query of ['category=x', 'date=2026', 'patient=Group/1'])
      await expectOutcome(await fhir(p, `/fhir/R4/Consent?${query}`), 400)
  })
})

describe('a token limited to centers', () => {
  it('sees only its centers’ documents, bytes and consents (never one without a center)', async () => {
    expect((await search(alm2Only, '/fhir/R4/DocumentReference')).ids).toEqual([w.imaging.id])
    expect((await search(alm2Only, `/fhir/R4/DocumentReference?patient=${w.pat2}`)).ids).toEqual([])
    expect((await search(alm2Only, '/fhir/R4/Binary')).ids).toEqual([w.imaging.id])
    expect((await search(alm2Only, '/fhir/R4/Consent')).ids).toEqual([w.alm2Consent.id])
    for (const url of [
      `/fhir/R4/DocumentReference/${w.referral.id}`,
      `/fhir/R4/DocumentReference/${w.centerless.id}`,
      `/fhir/R4/Binary/${w.referral.id}`,
      `/fhir/R4/Consent/${w.granted.id}`,
    ])
      await expectOutcome(await fhir(alm2Only, url), 404)
    expect((await fhir(alm2Only, `/fhir/R4/Binary/${w.imaging.id}`)).rawPayload.equals(png())).toBe(true)
    expect((await fhir(alm2Only, `/fhir/R4/Consent/${w.alm2Consent.id}`)).statusCode).toBe(200)
  })
})
