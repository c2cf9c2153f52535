import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import {
  LinkClaim,
  LinkTokenParams,
  UpstreamUnavailable,
  createLogger,
  esc,
  fastifyOptions,
  http,
  linkKind,
  linkPages,
  pageLanguage,
  renderPage,
  signLink,
  type FailurePage,
} from '@clinic/platform'
import { testAssertionKeys } from '@clinic/platform/testing'

const PAGE = ['es', 'en'] as const
const lang = (acceptLanguage?: string, link?: string) => pageLanguage(PAGE, { acceptLanguage, link })

describe('the page language: one rule for every link page', () => {
  it("is the link's own language first, when the page has it (by its primary subtag)", () => {
    expect(lang('es', 'en')).toBe('en')
    expect(lang('en', 'es-ES')).toBe('es')
    expect(lang('en', 'EN-gb')).toBe('en')
    // One the page lacks is no choice: the browser's then.
    expect(lang('en', 'fr')).toBe('en')
    expect(lang(undefined, 'fr')).toBe('es')
  })

  it("else the browser's: the highest q-value among the page's languages, a tag by its primary subtag", () => {
    expect(lang('en-GB,en;q=0.9,es;q=0.8')).toBe('en')
    expect(lang('fr, en;q=0.5, es;q=0.9')).toBe('es')
    expect(lang('es;q=0.1, en;q=0.8')).toBe('en')
    expect(lang('de-DE, en-US;q=0.7')).toBe('en')
    expect(lang('pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7,es;q=0.6')).toBe('en')
  })

  it("breaks ties by the header's order, whatever a tag's region", () => {
    expect(lang('en-GB, es')).toBe('en')
    expect(lang('es-MX, en')).toBe('es')
    expect(lang('en;q=0.5, es;q=0.5')).toBe('en')
  })

  it('takes `*` as each of the page languages in order, and q=0 as a refusal', () => {
    expect(lang('*')).toBe('es')
    expect(lang('fr, *;q=0.1')).toBe('es')
    expect(lang('es;q=0, *')).toBe('en')
    expect(lang('en-GB, en;q=0')).toBe('es')
    expect(lang('es;q=0, en;q=0')).toBe('es')
  })

  it("is the page's first language without a usable header", () => {
    for (const header of [undefined, '', 'fr', 'de-DE, it;q=0.5', ';;;', 'en;q=abc', 'xx-yy-zz'])
      expect([header, lang(header)]).toEqual([header, 'es'])
    expect(pageLanguage(['en', 'es'] as const, { acceptLanguage: 'fr' })).toBe('en')
  })
})

describe('the page shell', () => {
  it('escapes what comes from data (escape-html), never the markup around it', () => {
    expect(esc(`<script>alert("x")</script> & 'y'`)).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;',
    )
    expect(esc(7)).toBe('7')
    const html = renderPage({ lang: 'en', title: 'A <b>title</b>', style: 'p{color:red}', body: '<p>ok</p>' })
    expect(html).toBe(
      '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
        '<meta name="viewport" content="width=device-width, initial-scale=1">' +
        '<meta name="robots" content="noindex, nofollow">' +
        '<title>A &lt;b&gt;title&lt;/b&gt;</title><style>p{color:red}</style></head>' +
        '<body><p>ok</p></body></html>\n',
    )
  })
})

describe('a site of link pages (linkPages)', () => {
  const SECRET = 'a-link-secret-of-at-least-32-characters!'
  const KIND = linkKind({
    purpose: 'test',
    claims: Type.Object({ companyId: LinkClaim.companyId, lang: LinkClaim.lang }),
  })
  type View = { kind: 'open'; name: string } | FailurePage
  const STATUS = { open: 200, invalid: 400, unavailable: 503, error: 500 }
  const log = createLogger({ service: 'test', level: 'silent' })
  const app = Fastify(fastifyOptions(log))
  beforeAll(async () => {
    await app.register(http, { service: 'comms', version: '261122.01', assertionKeys: testAssertionKeys() })
    await app.register(async (site) => {
      const send = linkPages(site, {
        prefix: '/p/t',
        languages: PAGE,
        render: (view: View, l) => ({
          status: STATUS[view.kind],
          html: renderPage({
            lang: l,
            title: view.kind,
            style: '',
            body: view.kind === 'open' ? esc(view.name) : '',
          }),
        }),
        bodyLimit: 64,
      })
      const config = { public: true }
      site.get('/p/t/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) =>
        send(req, reply, { kind: 'open', name: '<Ana>' }),
      )
      site.post(
        '/p/t/*',
        {
          config,
          schema: { hide: true, params: LinkTokenParams, body: Type.Object({ a: Type.Literal('x') }) },
        },
        async () => {
          throw new UpstreamUnavailable()
        },
      )
    })
    await app.ready()
  })
  afterAll(() => app.close())

  const token = (l: string) => signLink(SECRET, KIND, { companyId: 7, lang: l })
  const htmlLang = (body: string) => /<html lang="(\w+)">/.exec(body)?.[1]

  it("sends each page with the page headers, in the token's language, else the browser's", async () => {
    const res = await app.inject({ url: `/p/t/${await token('en')}`, headers: { 'accept-language': 'es' } })
    expect(res.statusCode).toBe(200)
    expect(res.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    })
    expect(htmlLang(res.body)).toBe('en')
    expect(res.body).toContain('&lt;Ana&gt;')
    const browser = await app.inject({
      url: '/p/t/not-a-token',
      headers: { 'accept-language': 'fr, en;q=0.4' },
    })
    expect(htmlLang(browser.body)).toBe('en')
  })

  it('makes a bad request the invalid page with its 4xx, the service away 503 with Retry-After, never JSON', async () => {
    const t = await token('es')
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    const bad = await app.inject({ method: 'POST', url: `/p/t/${t}`, headers: form, payload: 'a=y' })
    expect([bad.statusCode, bad.headers['content-type'], bad.body]).toEqual([
      400,
      'text/html; charset=utf-8',
      expect.stringContaining('<title>invalid</title>'),
    ])
    const text = await app.inject({
      method: 'POST',
      url: `/p/t/${t}`,
      headers: { 'content-type': 'text/plain' },
      payload: 'a=x',
    })
    expect([text.statusCode, text.headers['content-type']]).toEqual([415, 'text/html; charset=utf-8'])
    const big = await app.inject({
      method: 'POST',
      url: `/p/t/${t}`,
      headers: form,
      payload: `a=${'x'.repeat(100)}`,
    })
    expect(big.statusCode).toBe(413)
    const away = await app.inject({ method: 'POST', url: `/p/t/${t}`, headers: form, payload: 'a=x' })
    expect([away.statusCode, away.headers['retry-after'], away.body]).toEqual([
      503,
      '5',
      expect.stringContaining('<title>unavailable</title>'),
    ])
  })

  it('shows the invalid page for the bare prefix (no token at all)', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await app.inject({ method, url: '/p/t' })
      expect([res.statusCode, res.headers['content-type']]).toEqual([400, 'text/html; charset=utf-8'])
    }
  })
})
