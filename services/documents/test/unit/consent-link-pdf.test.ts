import { signLink } from '@clinic/platform/core'
import { answerConsentLink } from '../../src/domain/answer-consent-link'
import { openConsentPdf } from '../../src/domain/open-consent-pdf'
import { CONSENT_PDF_LINK, PDF_LINK_SECONDS } from '../../src/domain/link-kinds'
import { bytesOf, fakeId } from '../fakes'
import { SECRET, linkWorld } from '../link-world'

/** GET /p/c/pdf/<token>: the signed PDF a grant's page offered, for 24 hours. */

/** A consent granted through its link, the PDF link its page gave, and a way to sign others. */
async function setup(o: { secret?: string | undefined } = {}) {
  const w = await linkWorld(o)
  const done = await answerConsentLink(
    { ...w.deps, secret: SECRET },
    {
      ...(await w.request()),
      answer: 'accept',
      name: 'Begoña Muñoz',
      ip: null,
      userAgent: null,
    },
  )
  const pdfUrl = (done as { pdfUrl: string }).pdfUrl
  const granted = (await w.store.findById(w.company, w.consent.id))!
  const documentId = granted.document_id!
  const pdfToken = (claims: Partial<{ consentId: string; documentId: string; exp: number }> = {}) =>
    signLink(SECRET, CONSENT_PDF_LINK, {
      companyId: w.company,
      consentId: w.consent.id,
      documentId,
      exp: Math.floor(w.time.now.getTime() / 1000) + PDF_LINK_SECONDS,
      ...claims,
    })
  const open = async (token = pdfUrl.slice('/p/c/pdf/'.length)) =>
    openConsentPdf(w.deps, await w.request(token))
  return { ...w, granted, documentId, pdfToken, open }
}

describe('openConsentPdf', () => {
  it('the signed PDF: its name, size and bytes; on the trail as a view of the page (page: pdf)', async () => {
    const { open, documents, company, documentId, content, seen, consent, linkId } = await setup()
    const doc = (await documents.findById(company, documentId))!
    const pdf = await open()
    expect(pdf).toMatchObject({
      kind: 'pdf',
      filename: 'consent-cataract-surgery-v1.pdf',
      size: doc.size_bytes,
    })
    const bytes = await bytesOf((pdf as { bytes: AsyncIterable<Buffer> }).bytes)
    expect(bytes.equals(content.blobs.get(`${company}:${doc.sha256}`)!.bytes)).toBe(true)
    expect(seen()).toEqual([
      {
        companyId: company,
        type: 'consent.link_viewed',
        subject: consent.id,
        codalmacen: 'ALM1',
        actorname: 'patient-link',
        data: { consent_id: consent.id, link_id: linkId, page: 'pdf' },
      },
    ])
  })

  it('for 24 hours: expired after, without a view recorded', async () => {
    const { open, at, views } = await setup()
    at(PDF_LINK_SECONDS * 1000 - 1000)
    expect((await open()).kind).toBe('pdf')
    at(1000)
    expect(await open()).toEqual({ kind: 'expired' })
    expect(views()).toHaveLength(1)
  })

  it('invalid for an altered token, a consent link, or without a secret; nothing recorded', async () => {
    const w = await setup()
    expect(await w.open(`${await w.pdfToken()}x`)).toEqual({ kind: 'invalid' })
    expect(await w.open(await w.token())).toEqual({ kind: 'invalid' })
    expect(
      await openConsentPdf({ ...w.deps, secret: undefined }, await w.request(await w.pdfToken())),
    ).toEqual({
      kind: 'invalid',
    })
    expect(w.views()).toEqual([])
  })

  it('not_found when the consent no longer points to that document, or is not there; the view recorded', async () => {
    const w = await setup()
    expect(await w.open(await w.pdfToken({ documentId: fakeId() }))).toEqual({ kind: 'not_found' })
    const ghost = fakeId()
    expect(await w.open(await w.pdfToken({ consentId: ghost }))).toEqual({ kind: 'not_found' })
    expect(w.seen().map((v) => [v.subject, v.codalmacen, v.data])).toEqual([
      [w.consent.id, 'ALM1', { consent_id: w.consent.id, link_id: w.linkId, page: 'pdf_not_found' }],
      // No consent: the link id is unknown, the consent's id stands for it.
      [ghost, undefined, { consent_id: ghost, link_id: ghost, page: 'pdf_not_found' }],
    ])
  })

  it('not_found for a document no longer available', async () => {
    const w = await setup()
    const doc = (await w.documents.findById(w.company, w.documentId))!
    w.documents.seed(w.company, { ...doc, status: 'deleted' })
    expect(await w.open()).toEqual({ kind: 'not_found' })
    expect(w.seen().map((v) => (v.data as { page: string }).page)).toEqual(['pdf'])
  })
})
