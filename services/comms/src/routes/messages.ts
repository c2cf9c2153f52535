import {
  ETagHeader,
  IdParams,
  bodyLimitOf,
  etagOf,
  listOf,
  problem,
  requestError,
  requestHash,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { AppointmentDirectory } from '../domain/appointment-directory'
import type { MessageStore } from '../domain/message-store'
import type { PatientDirectory } from '../domain/patient-directory'
import { getMessage, listMessages } from '../domain/read-messages'
import { sendFieldErrors } from '../domain/rules'
import { sendMessage } from '../domain/send-message'
import { ListMessagesQuery, Message, SendMessageBody } from '../schemas/message'

const tags = ['comms']

// Kept here until a second service needs it; appointments has the same in its platform branch.
const PostHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'the same key and body within 24 h replay the first answer',
    }),
  ),
})

/**
 * The largest valid send, as JSON (services.json `body_limits`, the gateway reads the same): a 64 KiB
 * email body may grow six-fold when escaped (`\u0001`), plus the other fields. Over the platform's
 * 64 KiB request limit on purpose, so that the body rule answers 400 rather than 413.
 */
const SEND_BODY_LIMIT = bodyLimitOf('/comms/send')

const validated =
  (o: RequestErrorOptions = {}) =>
  async (req: FastifyRequest) => {
    const invalid = requestError(req, o)
    if (invalid) throw invalid
  }

export interface MessageRoutesOptions {
  store: MessageStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
}

export const messageRoutes: FastifyPluginAsyncTypebox<MessageRoutesOptions> = async (app, deps) => {
  app.post(
    '/comms/send',
    {
      attachValidation: true,
      bodyLimit: SEND_BODY_LIMIT,
      preHandler: validated({ extra: sendFieldErrors }),
      schema: {
        tags,
        operationId: 'sendMessage',
        summary: 'Queue a message to a patient or their guardian',
        description:
          "Answers 202 with the queued message; delivery is asynchronous (follow it with GET /comms/messages/{id}). A patient who requires a legal guardian is written to through the guardian unless `recipient: \"patient\"`. The channel defaults to the patient's preferred channel, else the first the recipient has an address for (email, then sms). Another company's patient, or one outside the token's centers, is 422 unknown_patient. Send `Idempotency-Key` to make retries safe: nothing is sent twice.",
        headers: PostHeaders,
        body: SendMessageBody,
        response: {
          202: { ...Message, headers: { ...ETagHeader, location: Type.String() } },
          400: problem(
            'validation_failed (limits: email body 64 KiB, SMS 1,600 characters; no CR/LF in subject)',
          ),
          409: problem('idempotency_conflict'),
          422: problem('unknown_patient, guardian_required, no_contact_address or unknown_appointment'),
          503: problem('upstream_unavailable (Retry-After)'),
        },
      },
    },
    async (req, reply) => {
      const result = await sendMessage(req.ctx, deps, {
        body: req.body,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      })
      if (result.replayed) reply.header('idempotent-replayed', 'true')
      return reply
        .code(202)
        .header('location', `/comms/messages/${result.body.id}`)
        .header('etag', etagOf(result.body.version))
        .send(result.body)
    },
  )

  app.get(
    '/comms/messages',
    {
      attachValidation: true,
      preHandler: validated(),
      schema: {
        tags,
        operationId: 'listMessages',
        summary: 'List messages and their delivery state',
        description:
          'Newest first. `from`/`to` bound `created_at` (from inclusive, to exclusive). `meta.total` is exact; `meta.next` a cursor for `?after=`. A token limited to centers sees only messages of its centers.',
        querystring: ListMessagesQuery,
        response: {
          200: listOf(Message),
          400: problem('validation_failed or unknown_center'),
          403: problem('center_forbidden'),
        },
      },
    },
    async (req) => listMessages(req.ctx, deps.store, req.query),
  )

  app.get(
    '/comms/messages/:id',
    {
      attachValidation: true,
      preHandler: validated(),
      schema: {
        tags,
        operationId: 'getMessage',
        summary: 'A message and its delivery state',
        params: IdParams,
        response: { 200: { ...Message, headers: ETagHeader }, 404: problem('not_found') },
      },
    },
    async (req, reply) => {
      const message = await getMessage(req.ctx, deps.store, req.params.id)
      return reply.header('etag', etagOf(message.version)).send(message)
    },
  )
}
