import { createHash, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { BrowserContext } from 'playwright-core'
import { signLink } from '@clinic/platform/core'
import { waitFor } from '@clinic/platform/testing'
import { CONSENT_LINK } from '../../services/documents/src/domain/link-kinds'
import { heading, open, openBrowser } from '../src/browser'
import { SAMPLE_PNG, SETTLE_MS, call, makeTenant, multipartOf, stack, type Tenant } from '../src/client'

/**
 * Documents and consents from outside (DESIGN.md sections 15 and 16), through the gateway of the
 * e2e stack: uploads typed from their bytes, the 26 MiB upload cut off, downloads that no browser
 * runs, and a guardian answering a consent link in Debian's Chromium at a phone's size.
 */
let t: Tenant
let browser: BrowserContext
let closeBrowser: () => Promise<void>
beforeAll(async () => {
  t = await makeTenant(['ALM1'])
  ;({ browser, close: closeBrowser } = await openBrowser())
})
afterAll(async () => {
  await closeBrowser?.()
})

async function patient(o: Record<string, unknown> = {}) {
  const res = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Testa', last_name: 'Documento', birth_date: '1950-02-03', ...o },
  })
  expect(res.status).toBe(201)
  return res.body as { id: string }
}

const upload = (
  fields: Record<string, unknown>,
  file: Buffer,
  filename: string,
  contentType = 'application/pdf',
) => {
  const form = multipartOf({ ...fields, file })
  // The part's declared type and name are the client's: replace the generic ones.
  const body = Buffer.from(
    form.body
      .toString('latin1')
      .replace('filename="upload.png"', `filename="${filename}"`)
      .replace('Content-Type: application/octet-stream', `Content-Type: ${contentType}`),
    'latin1',
  )
  return call('POST', '/documents', { token: t.token, raw: body, contentType: form.contentType })
}
const total = async (patientId: string) =>
  (await call('GET', `/documents?patient_id=${patientId}`, { token: t.token })).body.meta.total as number

describe('uploads from outside', () => {
  it('refuses HTML named scan.pdf sent as application/pdf, and stores a PNG renamed .pdf as a PNG', async () => {
    const p = await patient()
    const html = Buffer.from('<!DOCTYPE html><html><body><script>alert(1)</script></body></html>', 'latin1')
    const refused = await upload({ patient_id: p.id, category: 'report' }, html, 'scan.pdf')
    expect(refused.status).toBe(415)
    expect(refused.body).toMatchObject({ code: 'unsupported_media_type', found: 'text/html' })
    const png = await upload({ patient_id: p.id, category: 'imaging' }, SAMPLE_PNG, 'fondo.pdf')
    expect(png.status).toBe(201)
    expect(png.body).toMatchObject({
      content_type: 'image/png',
      filename: 'fondo.pdf',
      size_bytes: SAMPLE_PNG.length,
    })
    expect(await total(p.id)).toBe(1)
  })

  it('cuts a 26 MiB upload off with 413 and stores nothing, declared or streamed', async () => {
    const p = await patient()
    const big = Buffer.concat([SAMPLE_PNG, Buffer.alloc(26 * 1024 * 1024, 7)])
    const declared = await upload({ patient_id: p.id, category: 'imaging' }, big, 'big.png')
    expect(declared.status).toBe(413)
    expect(declared.body.code).toBe('payload_too_large')
    // Without a length (chunked), the service cuts it at DOCUMENTS_MAX_BYTES as it streams.
    const form = multipartOf({ patient_id: p.id, category: 'imaging', file: big })
    let sent = 0
    const body = new ReadableStream({
      pull(controller) {
        if (sent >= form.body.length) return controller.close()
        controller.enqueue(form.body.subarray(sent, sent + 256 * 1024))
        sent += 256 * 1024
      },
    })
    const res = await fetch(`${stack().api}/documents`, {
      method: 'POST',
      headers: { 'x-service-token': t.token, 'content-type': form.contentType },
      body,
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(413)
    expect(((await res.json()) as { code: string }).code).toBe('payload_too_large')
    expect(await total(p.id)).toBe(0)
  })
})

describe('downloads in a browser', () => {
  it('an SVG is refused at upload; a file named like HTML or SVG downloads as an attachment that runs nothing', async () => {
    const p = await patient()
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>',
    )
    const refused = await upload({ patient_id: p.id, category: 'other' }, svg, 'x.svg', 'image/svg+xml')
    expect(refused.body).toMatchObject({ status: 415, found: 'image/svg+xml' })
    const named = await upload(
      { patient_id: p.id, category: 'other' },
      SAMPLE_PNG,
      '<svg onload=alert(1)>.html',
      'text/html',
    )
    expect(named.status).toBe(201)
    const url = `${stack().api}/documents/${named.body.id}/content`
    const head = await call('GET', `/documents/${named.body.id}/content`, { token: t.token })
    expect(head.headers.get('content-type')).toBe('image/png')
    expect(head.headers.get('content-disposition')).toMatch(/^attachment; /)
    expect(head.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'")
    expect(head.headers.get('x-content-type-options')).toBe('nosniff')
    const page = await browser.newPage()
    try {
      const dialogs: string[] = []
      page.on('dialog', (d) => {
        dialogs.push(d.message())
        void d.dismiss()
      })
      await page.setExtraHTTPHeaders({ 'x-service-token': t.token })
      // An attachment is a download, never a page: navigation to it does not render it.
      const [download] = await Promise.all([page.waitForEvent('download'), page.goto(url).catch(() => null)])
      // Saved under the extension of what the bytes are (a PNG), never the .html it was sent as.
      expect(download.suggestedFilename()).toMatch(/\.png$/)
      expect(download.suggestedFilename()).not.toContain('.html')
      expect(dialogs).toEqual([])
      expect(page.url()).not.toBe(url)
    } finally {
      await page.close()
    }
  })
})

describe('a consent in a browser', () => {
  it('the guardian opens the link on a phone, reads, types a name and accepts; reuse, alteration and expiry get clear pages', async () => {
    const phone = `+3461${String(t.companyId).padStart(7, '0').slice(-7)}`
    const child = await patient({
      language: 'es',
      requires_legal_guardian: true,
      guardian: { name: 'Tutora Ficticia', relationship: 'madre', phone },
      preferred_channel: 'sms',
    })
    const text = 'Se me ha explicado la adaptación de lentes de contacto.\n\nAutorizo la adaptación.'
    const template = await call('POST', '/consents/templates', {
      token: t.token,
      body: { key: 'contact-lens-minor', language: 'es', title: 'Lentes de contacto', body: text },
    })
    expect(template.status).toBe(201)
    const consent = await call('POST', '/consents', {
      token: t.token,
      body: { patient_id: child.id, template_key: 'contact-lens-minor', channel: 'sms', codalmacen: 'ALM1' },
    })
    expect(consent.status).toBe(201)
    expect(consent.body).toMatchObject({ signer_role: 'guardian', text_sha256: template.body.text_sha256 })
    const sms = await waitFor(
      () => {
        const file = path.join(stack().env.OUTBOX_DIR!, 'sms.jsonl')
        const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean)
        return (
          lines
            .map((l) => JSON.parse(l) as { to: string; body: string })
            .find((m) => m.to === phone && m.body.includes('/p/c/')) ?? null
        )
      },
      { timeoutMs: SETTLE_MS, what: 'the consent link sent to the guardian' },
    )
    const link = /(http\S+\/p\/c\/\S+)/.exec(sms.body)![1]!
    // The message names who asks: the company and the center, from the gateway's identity.
    expect(sms.body).toMatch(
      new RegExp(`^E2E Clinic ${t.companyId} \\(Center ALM1\\) le pide su consentimiento`),
    )

    const page = await browser.newPage()
    try {
      expect((await open(page, link)).status()).toBe(200)
      expect(await page.getAttribute('html', 'lang')).toBe('es')
      expect(await page.locator('#consent-text').innerText()).toBe(text)
      expect(await page.locator('#clinic').innerText()).toBe(`E2E Clinic ${t.companyId} (Center ALM1)`)
      expect(await page.locator('#behalf').innerText()).toBe(
        'Usted firma como representante legal de Testa Documento.',
      )
      expect(await page.evaluate<number>('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(390)
      await page.getByLabel('Su nombre completo').fill('Tutora Ficticia García')
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/p/c/')),
        page.getByRole('button', { name: 'Acepto', exact: true }).click(),
      ])
      await page.waitForLoadState()
      expect(answer.status()).toBe(200)
      expect(await heading(page)).toContain('consentimiento ha quedado registrado')
      // The page after: what was answered, for whom and when (in the center's time zone).
      const answered = await page.locator('#answered').innerText()
      expect(answered).toMatch(
        /^Tutora Ficticia García respondió «Acepto» a «Lentes de contacto» como representante legal de Testa Documento, el \d{1,2} de \S+ de \d{4} a las \d{1,2}:\d{2}:\d{2} \S+ \(Europe\/Madrid\)\.$/,
      )
      expect(await page.locator('#clinic').innerText()).toBe(`E2E Clinic ${t.companyId} (Center ALM1)`)
      // ...and offers the signed PDF: a download, the very document the clinic keeps.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Descargar el documento firmado (PDF)' }).click(),
      ])
      expect(download.suggestedFilename()).toMatch(/\.pdf$/)
      const saved = readFileSync((await download.path())!)
      expect(saved.subarray(0, 5).toString('latin1')).toBe('%PDF-')

      const granted = await call('GET', `/consents/${consent.body.id}`, { token: t.token })
      expect(granted.body).toMatchObject({
        status: 'granted',
        evidence: { signer_role: 'guardian', signer_name: 'Tutora Ficticia García', method: 'patient_link' },
      })
      expect(granted.body.evidence.user_agent).toContain('Chrome')
      expect(granted.body.evidence).toMatchObject({
        signer_name_on_file: 'Tutora Ficticia',
        signer_name_matches: true,
      })
      const pdf = await call('GET', `/documents/${granted.body.document_id}`, { token: t.token })
      expect(pdf.body).toMatchObject({ category: 'consent', content_type: 'application/pdf' })
      expect(pdf.body.sha256).toBe(createHash('sha256').update(saved).digest('hex'))

      // A second use, an altered token, an expired link: clear pages, never a 5xx.
      const again = await open(page, link)
      expect(again.status()).toBe(410)
      expect(await heading(page)).toContain('ya se ha usado')
      const altered = await open(page, `${link.slice(0, -4)}AAAA`)
      expect(altered.status()).toBe(400)
      expect(await heading(page)).toContain('no es válido')
      const expired = await open(page, `${stack().gatewayUrl}/p/c/${await expiredToken(consent.body.id)}`)
      expect(expired.status()).toBe(410)
      expect(await heading(page)).toContain('ha caducado')
    } finally {
      await page.close()
    }
  })
})

/** A link as documents signs them, for that consent, that expired a minute ago. */
const expiredToken = (consentId: string) =>
  signLink(stack().env.DOCUMENTS_LINK_SECRET!, CONSENT_LINK, {
    id: randomUUID(),
    companyId: t.companyId,
    consentId,
    lang: 'es',
    exp: Math.floor(Date.now() / 1000) - 60,
  })
