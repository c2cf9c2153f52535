import { toAppError } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { answerConsentLink, openConsentLink, type LinkDeps, type LinkRequest } from '../domain/consent-links'
import { langOf, renderConsentPage, type PageView } from '../links/page'

/**
 * What every page is sent with: no script may run, nothing is cached or framed, and the token in
 * the URL is never sent on as a Referer.
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
} as const

const TokenParams = Type.Object({ '*': Type.String({ maxLength: 1024 }) })
const AnswerForm = Type.Object(
  {
    answer: Type.Union([Type.Literal('accept'), Type.Literal('decline')]),
    name: Type.Optional(Type.String({ maxLength: 300 })),
  },
  { additionalProperties: false },
)

const tokenOf = (req: FastifyRequest) => (req.params as { '*'?: string })['*'] ?? ''
const linkRequest = (req: FastifyRequest): LinkRequest => ({
  token: tokenOf(req),
  log: req.log as unknown as Logger,
  requestId: String(req.id),
})

function sendPage(req: FastifyRequest, reply: FastifyReply, view: PageView, status?: number) {
  const page = renderConsentPage(view, langOf(tokenOf(req), req.headers['accept-language']))
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
  app.get('/p/c/*', { config, schema: { hide: true, params: TokenParams } }, async (req, reply) =>
    sendPage(req, reply, await openConsentLink(deps, linkRequest(req))),
  )
  app.post(
    '/p/c/*',
    { config, schema: { hide: true, params: TokenParams, body: AnswerForm } },
    async (req, reply) => {
      const form = req.body as { answer?: unknown; name?: unknown }
      const forwarded = req.headers['x-forwarded-for']
      const ip =
        (typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : undefined) || req.ip || null
      return sendPage(
        req,
        reply,
        await answerConsentLink(deps, {
          ...linkRequest(req),
          answer: form.answer,
          name: form.name,
          ip,
          userAgent: req.headers['user-agent'] ?? null,
        }),
      )
    },
  )
}
