import { AppError, enqueueEvents, problem } from '@clinic/platform'
import type { FastifyPluginAsync } from 'fastify'
import type { Knex } from 'knex'
import twilio from 'twilio'
import { messageEvent } from '../events/message-events'
import { toMessage } from '../db/repositories/messages-repository'

export interface TwilioWebhookOptions {
  knex: Knex
  /** TWILIO_AUTH_TOKEN: the key of X-Twilio-Signature. */
  authToken?: string
  /** TWILIO_WEBHOOK_URL: the public URL Twilio posts to (the signature covers it, not our path). */
  webhookUrl?: string
}

class BadSignature extends AppError {
  constructor() {
    super({
      status: 403,
      code: 'invalid_signature',
      title: 'Invalid signature',
      detail: 'X-Twilio-Signature does not match',
    })
  }
}

const RECEIPTS: Record<string, 'delivered' | 'undelivered'> = {
  delivered: 'delivered',
  undelivered: 'undelivered',
  failed: 'undelivered',
}

/**
 * Twilio status callbacks: no API token (the gateway forwards them as they are); the signature
 * is the authentication. Moves a sent SMS to delivered or undelivered; unknown sids are ignored
 * (204 all the same: Twilio would only retry).
 */
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
        throw new BadSignature()
      const status = RECEIPTS[params.MessageStatus ?? '']
      const sid = params.MessageSid
      if (status && sid) {
        const error = params.ErrorCode ? `twilio error ${params.ErrorCode}` : null
        const changed = await o.knex.transaction(async (trx) => {
          const { rows } = (await trx.raw('select * from apply_receipt(?, ?, ?)', [sid, status, error])) as {
            rows: Array<Record<string, unknown>>
          }
          await enqueueEvents(
            trx,
            rows.map((r) => messageEvent('comms.message.delivered', r.idempresa as number, toMessage(r))),
          )
          return rows.length
        })
        req.log.info({ receipt: status, matched: changed }, 'twilio status callback')
      }
      return reply.code(204).send()
    },
  )
}
