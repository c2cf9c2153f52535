import { LinkTokenParams, linkPages, linkRequestOf } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import type { Clock } from '../clock'
import { LINK_ACTIONS, answerPatientLink, openPatientLink, type LinkDeps } from '../domain/patient-links'
import { renderLinkPage } from '../pages/appointment-page'

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
  // Form bodies of one short field; whatever fails on the way is a page too; `/p/a` the invalid page.
  const sendPage = linkPages(app, { prefix: '/p/a', render: renderLinkPage, bodyLimit: 1024 })
  // Pages, not API operations: hidden from the OpenAPI document.
  const config = { public: true }
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
