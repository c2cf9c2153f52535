import { problem } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
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
const SignatureHeader = Type.Object({
  'x-twilio-signature': Type.Optional(
    Type.String({ description: "Twilio's signature of the URL and form; a missing or wrong one is 403" }),
  ),
})

export const twilioWebhookRoutes: FastifyPluginAsync<TwilioWebhookOptions> = async (app, o) => {
  // Form bodies for this route only (the plugin is encapsulated).
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 16 * 1024 },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)))
    },
  )
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
      const params = (req.body ?? {}) as Record<string, string>
      const signature = req.headers['x-twilio-signature']
      if (
        !o.authToken ||
        !o.webhookUrl ||
        typeof signature !== 'string' ||
        !twilio.validateRequest(o.authToken, signature, o.webhookUrl, params)
      )
        throw new InvalidSignature()
      const applied = await applyReceipt(o.store, params as ApplyReceipt)
      if (applied) req.log.info(applied, 'twilio status callback')
      return reply.code(204).send()
    },
  )
}
