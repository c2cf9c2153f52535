import { signLink, verifyLink } from '@clinic/platform/core'
import { CONSENT_LINK, CONSENT_PDF_LINK, PDF_LINK_SECONDS } from '../../src/domain/link-kinds'

/**
 * Links already sent keep opening: tokens made by documents' own links/tokens.ts before the
 * platform's link kit (these strings, under this secret) verify as they did, and the kit makes the
 * same bytes (each kind kept its `typ`).
 */
const SECRET = 'a-link-secret-of-at-least-32-characters!'
const BEFORE = {
  consent:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6ImNsaW5pYy1jb25zZW50LWxpbmsrand0In0.eyJpZCI6IjAxOTBhMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwNCIsImNvbXBhbnlJZCI6NywiY29uc2VudElkIjoiMDE5MGEwMDAtMDAwMC03MDAwLTgwMDAtMDAwMDAwMDAwMDA1IiwibGFuZyI6ImVuIiwiZXhwIjo0MTAyNDQ0ODAwLCJhdWQiOiJjbGluaWMtbGluazpjb25zZW50In0.EQ_y2COzH3cd7ykJOG2ZuSHx6sGLyCqZgOqrxE1j6z4',
  pdf: 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImNsaW5pYy1jb25zZW50LXBkZitqd3QifQ.eyJjb21wYW55SWQiOjcsImNvbnNlbnRJZCI6IjAxOTBhMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwNSIsImRvY3VtZW50SWQiOiIwMTkwYTAwMC0wMDAwLTcwMDAtODAwMC0wMDAwMDAwMDAwMDYiLCJleHAiOjQxMDI0NDQ4MDAsImF1ZCI6ImNsaW5pYy1saW5rOmNvbnNlbnQtcGRmIn0.hlgVA2-1gj814Z5_PKXo2xeAUjFhHE17jfes8p1MfxY',
}
const consent = {
  id: '0190a000-0000-7000-8000-000000000004',
  companyId: 7,
  consentId: '0190a000-0000-7000-8000-000000000005',
  lang: 'en',
  exp: 4102444800,
}
const pdf = {
  companyId: 7,
  consentId: '0190a000-0000-7000-8000-000000000005',
  documentId: '0190a000-0000-7000-8000-000000000006',
  exp: 4102444800,
}
const now = new Date('2026-06-01T00:00:00Z')

describe("documents' links, made before the link kit", () => {
  it('open as before, each as its own kind only', async () => {
    expect(await verifyLink(SECRET, CONSENT_LINK, BEFORE.consent, now)).toEqual({ ok: true, claims: consent })
    expect(await verifyLink(SECRET, CONSENT_PDF_LINK, BEFORE.pdf, now)).toEqual({ ok: true, claims: pdf })
    expect(await verifyLink(SECRET, CONSENT_LINK, BEFORE.pdf, now)).toMatchObject({ ok: false })
    expect(await verifyLink(SECRET, CONSENT_PDF_LINK, BEFORE.consent, now)).toMatchObject({ ok: false })
  })

  it('are what the kit makes today, to the byte', async () => {
    expect(await signLink(SECRET, CONSENT_LINK, consent)).toBe(BEFORE.consent)
    expect(await signLink(SECRET, CONSENT_PDF_LINK, pdf)).toBe(BEFORE.pdf)
  })
})

describe('what each kind of link must carry', () => {
  it('a PDF link without its document, consent or company, or with one that is not an id, is refused as altered', async () => {
    for (const claims of [
      { companyId: 7, consentId: pdf.consentId, exp: pdf.exp },
      { companyId: 7, documentId: pdf.documentId, exp: pdf.exp },
      { consentId: pdf.consentId, documentId: pdf.documentId, exp: pdf.exp },
      { ...pdf, documentId: 'not-an-id' },
      { ...pdf, companyId: 0 },
    ]) {
      const token = await signLink(SECRET, CONSENT_PDF_LINK, claims as typeof pdf)
      expect([claims, await verifyLink(SECRET, CONSENT_PDF_LINK, token, now)]).toEqual([
        claims,
        { ok: false, reason: 'altered' },
      ])
    }
  })

  it('a consent link names its link id, company, consent, language and expiry', async () => {
    for (const drop of ['id', 'companyId', 'consentId', 'lang'] as const) {
      const { [drop]: _, ...claims } = consent
      const token = await signLink(SECRET, CONSENT_LINK, claims as typeof consent)
      expect([drop, await verifyLink(SECRET, CONSENT_LINK, token, now)]).toEqual([
        drop,
        { ok: false, reason: 'altered' },
      ])
    }
  })

  it('the signed PDF is offered for 24 hours', () => expect(PDF_LINK_SECONDS).toBe(24 * 60 * 60))
})
