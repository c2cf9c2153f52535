import { problem } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import twilio from 'twilio'
import { applyReceipt, type ApplyReceipt } from '../domain/apply-receipt'
import { InvalidSignature } from '../domain/errors'
import type { MessageStore } from '../domain/message-store'

export interface TwilioWebhookOptions {
  store: Pick<MessageStore, 'receiptTransaction'>
  /** TWILIO_AUTH_TOKEN: the key of X-Twilio-Signature. */
  authToken?: string
  /** TWILIO_WEBHOOK_URL: the public URL Twilio posts to (the signature covers it, not our path). */
  webhookUrl?: string
}

/**
 * Twilio status callbacks: no API token (the gateway forwards them as they are); the signature
 * is the authentication. Moves a sent SMS to delivered or undelivered; unknown sids are ignored
 * (204 all the same: Twilio would only retry).
 */
/**
 * What Twilio posts (form fields, all text). Every field is optional and others are allowed: the
 * signature decides, so an unsigned or odd callback is a 403, never a 400 that tells a prober more.
 */
const StatusCallback = Type.Object(
  {
    MessageSid: Type.Optional(Type.String({ description: 'the provider_id of the message' })),
    MessageStatus: Type.Optional(
      Type.String({ description: 'queued, sent, delivered, undelivered, failed' }),
    ),
    ErrorCode: Type.Optional(Type.String()),
    AccountSid: Type.Optional(Type.String()),
  },
  {
    title: 'TwilioStatusCallback',
    additionalProperties: Type.String(),
    examples: [
      {
        MessageSid: 'SM0123456789abcdef0123456789abcdef',
        MessageStatus: 'delivered',
        AccountSid: 'AC0123456789abcdef0123456789abcdef',
      },
    ],
  },
)
export const SignatureHeader = Type.Object({
  'x-twilio-signature': Type.Optional(
    Type.String({ description: "Twilio's signature of the URL and form; a missing or wrong one is 403" }),
  ),
})

/** Form bodies as Twilio posts them, for the routes of the plugin `app` only (it is encapsulated). */
export function acceptTwilioForms(app: FastifyInstance) {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 16 * 1024 },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)))
    },
  )
}

/**
 * Throws 403 invalid_signature unless X-Twilio-Signature signs `url` (the public URL Twilio posted
 * to) and the form; without a key or URL every request is refused. Returns the form.
 */
export function verifiedTwilioForm(req: FastifyRequest, authToken?: string, url?: string) {
  const params = (req.body ?? {}) as Record<string, string>
  const signature = req.headers['x-twilio-signature']
  if (
    !authToken ||
    !url ||
    typeof signature !== 'string' ||
    !twilio.validateRequest(authToken, signature, url, params)
  )
    throw new InvalidSignature()
  return params
}

export const twilioWebhookRoutes: FastifyPluginAsync<TwilioWebhookOptions> = async (app, o) => {
  acceptTwilioForms(app)
  app.post(
    '/comms/webhooks/twilio',
    {
      config: { public: true },
      schema: {
        tags: ['comms'],
        operationId: 'twilioStatusCallback',
        summary: 'Twilio message status callback (signed by Twilio; no API token)',
        consumes: ['application/x-www-form-urlencoded'],
        headers: SignatureHeader,
        body: StatusCallback,
        response: {
          204: { type: 'null', description: 'accepted (unknown sids too)' },
          403: problem('invalid_signature'),
        },
      },
    },
    async (req, reply) => {
      const params = verifiedTwilioForm(req, o.authToken, o.webhookUrl)
      const applied = await applyReceipt(o.store, params as ApplyReceipt)
      if (applied) req.log.info(applied, 'twilio status callback')
      return reply.code(204).send()
    },
  )
}
