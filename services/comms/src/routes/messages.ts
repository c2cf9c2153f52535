import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PostHeaders,
  internalApi,
  bodyLimitOf,
  listOf,
  problem,
  requestHash,
  sendResource,
  serveInternal,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AppointmentDirectory } from '../domain/directories'
import type { MessageStore } from '../domain/message-store'
import type { PatientDirectory } from '../domain/directories'
import type { AdmissionMetrics, MessagingLimits } from '../domain/queue-message'
import { getMessage, listMessages } from '../domain/read-messages'
import { sendFieldErrors } from '../domain/rules'
import { sendMessage } from '../domain/send-message'
import { ListMessagesQuery, Message, SendMessageBody } from '../schemas/message'

const tags = ['comms']

/**
 * The largest valid send, as JSON (services.json `body_limits`, the gateway reads the same): a 64 KiB
 * email body may grow six-fold when escaped (`\u0001`), plus the other fields. Over the platform's
 * 64 KiB request limit on purpose, so that the body rule answers 400 rather than 413.
 */
const SEND_BODY_LIMIT = bodyLimitOf('/comms/send')

export interface MessageRoutesOptions {
  store: MessageStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  limits: MessagingLimits
  metrics?: AdmissionMetrics
}

const sendMessageRoute = {
  bodyLimit: SEND_BODY_LIMIT,
  config: { rules: { extra: sendFieldErrors } },
  schema: {
    tags,
    operationId: 'sendMessage',
    summary: 'Queue a message to a patient or their guardian',
    description:
      "Answers 202 with the queued message; delivery is asynchronous (follow it with GET /comms/messages/{id}). A patient who requires a legal guardian is written to through the guardian; `recipient: \"patient\"` for such a patient needs `override_guardian: true` (else 422 guardian_override_required), recorded on the message and the audit trail. The channel defaults to the patient's preferred channel, else the first the recipient has an address for (email, then sms). Another company's patient, or one outside the token's centers, is 422 unknown_patient. SMS go only to valid numbers of the allowed countries, never premium-rate or shared-cost ones (422 destination_not_allowed). An address that opted out gets the message `suppressed` (202, never sent). Each company may queue a number of messages per channel and UTC day, and each recipient address receives at most a few an hour: over either, 429 messaging_quota_exceeded with Retry-After (the detail names the limit), and nothing is stored. Send `Idempotency-Key` to make retries safe: nothing is sent twice, and a refused send may be retried with the same key.",
    headers: PostHeaders,
    body: SendMessageBody,
    response: {
      202: { ...Message, headers: { ...ETagHeader, location: Type.String() } },
      400: problem(
        'validation_failed (limits: email body 64 KiB, SMS 1,600 characters; no CR/LF in subject)',
      ),
      409: problem('idempotency_conflict'),
      422: problem(
        'unknown_patient, guardian_required, guardian_override_required, no_contact_address, unknown_appointment or destination_not_allowed',
      ),
      429: problem(
        'messaging_quota_exceeded: the daily sms, daily email or hourly per recipient limit (the detail names it); retry after Retry-After seconds. Also rate_limited.',
      ),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}
const listMessagesRoute = {
  schema: {
    tags,
    operationId: 'listMessages',
    summary: 'List messages and their delivery state',
    description:
      'Newest first. `from`/`to` bound `created_at` (from inclusive, to exclusive). `meta.total` is exact; `meta.next` a cursor for `?after=`. A token limited to centers sees only messages of its centers.',
    querystring: ListMessagesQuery,
    response: {
      200: listOf(Message, 'MessageList'),
    },
  },
}
const getMessageRoute = {
  schema: {
    tags,
    operationId: 'getMessage',
    summary: 'A message and its delivery state',
    description: "A message outside `codalmacen` or the token's centers is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...Message, headers: ETagHeader } },
  },
}

/** The routes state their schemas and rules (above); each handler calls one use case. */
export const messageRoutes: FastifyPluginAsyncTypebox<MessageRoutesOptions> = async (app, deps) => {
  app.post('/comms/send', sendMessageRoute, async (req, reply) => {
    const result = await sendMessage(req.ctx, deps, {
      body: req.body,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 202, location: `/comms/messages/${result.body.id}` })
  })

  // Another service's message on its caller's behalf (documents sends a consent's link; declared in
  // packages/platform/src/internal-api/comms.ts): the same use case, rules and limits, under that
  // caller's company and centers.
  serveInternal(
    app,
    internalApi.comms.send,
    async (req, reply) => {
      const result = await sendMessage(req.ctx, deps, {
        body: req.body,
        idempotencyKey: undefined,
        requestHash: requestHash(req.method, req.url, req.body),
      })
      return sendResource(reply, result, { status: 202, location: `/comms/messages/${result.body.id}` })
    },
    { bodyLimit: SEND_BODY_LIMIT, config: sendMessageRoute.config },
  )

  app.get('/comms/messages', listMessagesRoute, async (req) => listMessages(req.ctx, deps.store, req.query))

  app.get('/comms/messages/:id', getMessageRoute, async (req, reply) =>
    sendResource(reply, {
      body: await getMessage(req.ctx, deps.store, { id: req.params.id, queryCenter: req.query.codalmacen }),
    }),
  )
}
