import { signLink } from '@clinic/platform/core'
import { LINK_ACTOR } from '../../src/domain/consent-links'
import { openConsentLink } from '../../src/domain/open-consent-link'
import { CONSENT_PDF_LINK } from '../../src/domain/link-kinds'
import { fakeId } from '../fakes'
import { SECRET, linkWorld } from '../link-world'

/** GET /p/c/<token>: the page to sign, or why not; every view of a valid link on the trail first. */

describe('openConsentLink', () => {
  it('shows the exact text, who asks, whose behalf and who is on file to sign; the view is on the trail', async () => {
    const { deps, request, template, consent, linkId, company, seen } = await linkWorld({ guardian: true })
    expect(await openConsentLink(deps, await request())).toEqual({
      kind: 'open',
      template,
      signerRole: 'guardian',
      patientName: 'Begoña Muñoz',
      signerName: 'Marta García',
      clinic: { name: 'Clínica Ñandú', center: 'Centro Gràcia', timeZone: 'Europe/Madrid' },
    })
    expect(seen()).toEqual([
      {
        companyId: company,
        type: 'consent.link_viewed',
        subject: consent.id,
        codalmacen: 'ALM1',
        actorname: LINK_ACTOR,
        data: { consent_id: consent.id, link_id: linkId, page: 'open' },
      },
    ])
    expect(LINK_ACTOR).toBe('patient-link')
  })

  it("the patient's own name to sign with when no guardian is needed; none known when the patient is gone", async () => {
    const w = await linkWorld()
    expect(await openConsentLink(w.deps, await w.request())).toMatchObject({
      signerRole: 'patient',
      patientName: 'Begoña Muñoz',
      signerName: 'Begoña Muñoz',
    })
    w.patients.entries.clear()
    expect(await openConsentLink(w.deps, await w.request())).toMatchObject({
      patientName: 'unknown patient',
      signerName: null,
    })
  })

  it('invalid without a secret, for an altered token, another kind of link or another key: nothing recorded', async () => {
    const w = await linkWorld()
    const good = await w.token()
    const pdfLink = await signLink(SECRET, CONSENT_PDF_LINK, {
      companyId: w.company,
      consentId: w.consent.id,
      documentId: fakeId(),
      exp: Math.floor(Date.parse(w.consent.expires_at) / 1000),
    })
    const otherKey = await w.token({}, `${SECRET}-other`)
    for (const t of [`${good.slice(0, -2)}xx`, pdfLink, otherKey, '', 'a.b.c'])
      expect(await openConsentLink(w.deps, await w.request(t))).toEqual({ kind: 'invalid' })
    const secretless = await linkWorld({ secret: undefined })
    expect(await openConsentLink(secretless.deps, await secretless.request())).toEqual({ kind: 'invalid' })
    expect([w.views(), secretless.views()]).toEqual([[], []])
  })

  it('expired once the token is, without a view recorded', async () => {
    const w = await linkWorld()
    w.at(w.consent.expires_at)
    expect(await openConsentLink(w.deps, await w.request())).toEqual({ kind: 'expired' })
    expect(w.views()).toEqual([])
  })

  it('expired once the consent is, even under a token that lives longer; the view recorded', async () => {
    const w = await linkWorld()
    const longer = await w.token({ exp: Math.floor(Date.parse(w.consent.expires_at) / 1000) + 3600 })
    w.at(w.consent.expires_at)
    expect(await openConsentLink(w.deps, await w.request(longer))).toEqual({ kind: 'expired' })
    w.at(-1)
    expect((await openConsentLink(w.deps, await w.request(longer))).kind).toBe('open')
    expect(w.seen().map((v) => (v.data as { page: string }).page)).toEqual(['expired', 'open'])
  })

  it.each(['granted', 'refused', 'withdrawn', 'expired'] as const)(
    'says a %s consent is used',
    async (status) => {
      const w = await linkWorld()
      w.make({ status })
      expect(await openConsentLink(w.deps, await w.request())).toEqual({ kind: 'used', status })
      expect(w.seen()).toMatchObject([{ codalmacen: 'ALM1', data: { page: 'used' } }])
    },
  )

  it("not_found for a link that is no longer its consent's (another link id), or a consent not there", async () => {
    const w = await linkWorld()
    const stale = await w.token({ id: fakeId() })
    expect(await openConsentLink(w.deps, await w.request(stale))).toEqual({ kind: 'not_found' })
    const ghost = fakeId()
    const missing = await w.token({ consentId: ghost })
    expect(await openConsentLink(w.deps, await w.request(missing))).toEqual({ kind: 'not_found' })
    // Another company's token for this consent: its company is the only scope.
    const elsewhere = await w.token({ companyId: w.company + 1 })
    expect(await openConsentLink(w.deps, await w.request(elsewhere))).toEqual({ kind: 'not_found' })
    expect(w.seen().map((v) => [v.companyId, v.subject, v.codalmacen, v.data])).toEqual([
      [w.company, w.consent.id, undefined, expect.objectContaining({ page: 'not_found' })],
      [w.company, ghost, undefined, expect.objectContaining({ page: 'not_found' })],
      [w.company + 1, w.consent.id, undefined, expect.objectContaining({ page: 'not_found' })],
    ])
  })
})
