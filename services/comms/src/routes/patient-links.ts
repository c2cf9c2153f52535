import { LinkTokenParams, PAGE_HEADERS, linkRequestOf, linkTokenOf, toAppError } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Clock } from '../clock'
import { LINK_ACTIONS, answerPatientLink, openPatientLink, type LinkDeps } from '../domain/patient-links'
import { langOf, renderLinkPage, type PageView } from '../links/page'

export interface PatientLinkOptions {
  /** COMMS_LINK_SECRET; without it every link is the invalid page (400). */
  secret: string | undefined
  /** What time it is for a token's expiry (COMMS_CLOCK_FILE; tests move it). */
  clock: Clock
  appointments: LinkDeps['appointments']
  uses: LinkDeps['uses']
}

const AnswerForm = Type.Object(
  { action: Type.Union(LINK_ACTIONS.map((a) => Type.Literal(a))) },
  { additionalProperties: false },
)

/** The page of `view`, with its own status code unless `status` says otherwise. */
function sendPage(req: FastifyRequest, reply: FastifyReply, view: PageView, status?: number) {
  const page = renderLinkPage(view, langOf(linkTokenOf(req), req.headers['accept-language']))
  const code = status ?? page.status
  // The access line names what the page said (never the token: the route is logged, not the URL).
  if (code >= 400 && !reply.problemCode) reply.problemCode = `link_${view.kind}`
  return reply.code(code).headers(PAGE_HEADERS).send(page.html)
}

/**
 * `GET /p/a/<token>`: the appointment a reminder names, with Confirm and Cancel; `POST` the same URL
 * (a form, `action=confirm|cancel`): the answer, once. No API token: public for the platform's
 * assertion check (the gateway forwards services.json `pages` without one); the signed token is
 * the authentication. Every outcome is an HTML page, never JSON: an altered token 400, expired or
 * used 410, unknown appointment 404, a status that allows no answer 409, the appointments service
 * or the database away 503 (the token is not spent). Hidden from the OpenAPI document (a page for
 * people, not an API).
 */
export const patientLinkRoutes: FastifyPluginAsync<PatientLinkOptions> = async (app, o) => {
  const deps: LinkDeps = { secret: o.secret, clock: o.clock, appointments: o.appointments, uses: o.uses }
  // Form bodies for these routes only (the plugin is encapsulated): one short field.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 1024 },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  )
  // Whatever fails on the way (a bad form, a service or the database away) is a page too.
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    if (appErr.status === 503) req.log.warn({ err: err.message, code: appErr.code }, 'patient link failed')
    else if (appErr.status >= 500) req.log.error({ err }, 'patient link failed')
    if (appErr.headers) reply.headers(appErr.headers)
    reply.problemCode = appErr.code
    // A request no page of ours makes (a bad form, another media type, text we refuse): its 4xx.
    if (appErr.status < 500) return sendPage(req, reply, { kind: 'invalid' }, appErr.status)
    return sendPage(req, reply, { kind: appErr.status === 503 ? 'unavailable' : 'error' })
  })
  // Pages, not API operations: hidden from the OpenAPI document.
  const config = { public: true }
  // No token at all (`/p/a`, `/p/a/`): the invalid page rather than the API's 401.
  app.route({
    method: ['GET', 'POST'],
    url: '/p/a',
    config,
    schema: { hide: true, params: Type.Object({}) },
    handler: async (req, reply) => sendPage(req, reply, { kind: 'invalid' }),
  })
  app.get('/p/a/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) => {
    return sendPage(req, reply, await openPatientLink(deps, linkRequestOf(req)))
  })
  app.post(
    '/p/a/*',
    { config, schema: { hide: true, params: LinkTokenParams, body: AnswerForm } },
    async (req, reply) => {
      const action = (req.body as { action?: unknown }).action
      return sendPage(req, reply, await answerPatientLink(deps, { ...linkRequestOf(req), action }))
    },
  )
}
