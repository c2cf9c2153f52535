import { Readable } from 'node:stream'
import { LinkTokenParams, PAGE_HEADERS, linkRequestOf, linkTokenOf, toAppError } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { answerConsentLink, openConsentLink, openConsentPdf, type LinkDeps } from '../domain/consent-links'
import { contentDisposition } from '../domain/filename'
import { langOf, renderConsentPage, type PageView } from '../links/page'

const AnswerForm = Type.Object(
  {
    answer: Type.Union([Type.Literal('accept'), Type.Literal('decline')]),
    name: Type.Optional(Type.String({ maxLength: 300 })),
  },
  { additionalProperties: false },
)

function sendPage(req: FastifyRequest, reply: FastifyReply, view: PageView, status?: number) {
  const page = renderConsentPage(view, langOf(linkTokenOf(req), req.headers['accept-language']))
  const code = status ?? page.status
  if (code >= 400 && !reply.problemCode) reply.problemCode = `link_${view.kind}`
  return reply.code(code).headers(PAGE_HEADERS).send(page.html)
}

/**
 * `GET /p/c/<token>`: the consent's exact text, whose behalf the signer acts on, a name field and
 * Accept / Decline; `POST` the same URL (a form): the answer, once. Public for the platform's
 * assertion check (the gateway forwards services.json `pages` without an API token): the signed
 * token is the authentication. Every outcome is an HTML page, never a 5xx for a bad token.
 */
export const consentPageRoutes: FastifyPluginAsync<{ deps: LinkDeps }> = async (app, { deps }) => {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 2048 },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  )
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    if (appErr.status === 503) req.log.warn({ err: err.message, code: appErr.code }, 'consent link failed')
    else if (appErr.status >= 500) req.log.error({ err }, 'consent link failed')
    reply.problemCode = appErr.code
    if (appErr.status < 500) return sendPage(req, reply, { kind: 'invalid' }, appErr.status)
    return sendPage(req, reply, { kind: appErr.status === 503 ? 'unavailable' : 'error' })
  })
  const config = { public: true }
  app.route({
    method: ['GET', 'POST'],
    url: '/p/c',
    config,
    schema: { hide: true, params: Type.Object({}) },
    handler: async (req, reply) => sendPage(req, reply, { kind: 'invalid' }),
  })
  // The signed PDF the page after a grant offers (24 hours): data to keep, never a page to run.
  app.get('/p/c/pdf/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) => {
    const pdf = await openConsentPdf(deps, linkRequestOf(req))
    if (pdf.kind !== 'pdf') return sendPage(req, reply, pdf)
    return reply
      .headers({
        'content-type': 'application/pdf',
        'content-disposition': contentDisposition(pdf.filename),
        'content-length': pdf.size,
        'x-content-type-options': 'nosniff',
        'content-security-policy': "sandbox; default-src 'none'",
        'cache-control': 'private, no-store',
        'referrer-policy': 'no-referrer',
      })
      .send(Readable.from(pdf.bytes, { highWaterMark: 1 }))
  })
  app.get('/p/c/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) =>
    sendPage(req, reply, await openConsentLink(deps, linkRequestOf(req))),
  )
  app.post(
    '/p/c/*',
    { config, schema: { hide: true, params: LinkTokenParams, body: AnswerForm } },
    async (req, reply) => {
      const form = req.body as { answer?: unknown; name?: unknown }
      const forwarded = req.headers['x-forwarded-for']
      const ip =
        (typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : undefined) || req.ip || null
      return sendPage(
        req,
        reply,
        await answerConsentLink(deps, {
          ...linkRequestOf(req),
          answer: form.answer,
          name: form.name,
          ip,
          userAgent: req.headers['user-agent'] ?? null,
        }),
      )
    },
  )
}
