import { problem } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import type { PreferenceStore } from '../domain/preference-store'
import { applySmsKeyword, type InboundMessageTimes, type InboundSms } from '../domain/sms-keywords'
import { SignatureHeader, acceptTwilioForms, verifiedTwilioForm } from './twilio-webhook'

export interface TwilioInboundOptions {
  store: PreferenceStore
  /** TWILIO_AUTH_TOKEN: the key of X-Twilio-Signature. */
  authToken?: string
  /**
   * The public URL Twilio posts incoming messages to (the signature covers it):
   * TWILIO_INBOUND_WEBHOOK_URL, else TWILIO_WEBHOOK_URL + `/inbound` (config.ts twilioInboundUrl).
   */
  inboundUrl?: string
  /** Twilio's Messages API, which dates each message (the order keywords apply in); unset: arrival. */
  times?: InboundMessageTimes
  /** The service's clock (COMMS_CLOCK_FILE): the instant of a message Twilio cannot date. */
  clock: () => Date
}

/** An empty TwiML answer: Twilio sends nothing back (its own opt-out reply, where on, is its own). */
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'

/** What Twilio posts for an incoming message (form fields, all text); the signature decides. */
const IncomingMessage = Type.Object(
  {
    From: Type.Optional(Type.String({ description: 'the sender, E.164' })),
    Body: Type.Optional(
      Type.String({
        description:
          'STOP, BAJA, CANCELAR, UNSUBSCRIBE (and STOPALL, CANCEL, END, QUIT, OPTOUT, REVOKE) opt out; START, ALTA, UNSTOP opt back in; any case, the whole message',
      }),
    ),
    MessageSid: Type.Optional(Type.String()),
    AccountSid: Type.Optional(Type.String()),
  },
  {
    title: 'TwilioIncomingMessage',
    additionalProperties: Type.String(),
    examples: [
      {
        MessageSid: 'SM0123456789abcdef0123456789abcdef',
        AccountSid: 'AC0123456789abcdef0123456789abcdef',
        From: '+34600111222',
        To: '+34900000000',
        Body: 'STOP',
      },
    ],
  },
)

/**
 * Incoming SMS (Twilio's "a message comes in" webhook): no API token, the signature is the
 * authentication, exactly as for status callbacks. A keyword sets the sender's SMS consent in every
 * company that has written to the number (DESIGN.md section 12); anything else is ignored.
 */
export const twilioInboundRoutes: FastifyPluginAsync<TwilioInboundOptions> = async (app, o) => {
  acceptTwilioForms(app)
  app.post(
    '/comms/webhooks/twilio/inbound',
    {
      config: { public: true },
      schema: {
        tags: ['comms'],
        operationId: 'twilioIncomingMessage',
        summary: 'Twilio incoming SMS: opt-out and opt-in keywords (signed by Twilio; no API token)',
        description:
          'A message that is exactly an opt-out keyword (STOP, BAJA, CANCELAR, UNSUBSCRIBE; also STOPALL, CANCEL, END, QUIT, OPTOUT, REVOKE; any case, surrounding spaces and punctuation ignored) opts the sender out of SMS in every company that has messaged the number or keeps a preference for it; START, ALTA or UNSTOP opts back in. Source `sms_keyword`, one comms.preference.updated per company changed. Each message is taken once (by `MessageSid`: a request sent again changes nothing) and in the order Twilio received them (its Messages API dates them): a keyword older than one already taken never undoes it. Anything else changes nothing. Answers an empty TwiML response.',
        consumes: ['application/x-www-form-urlencoded'],
        headers: SignatureHeader,
        body: IncomingMessage,
        response: {
          200: {
            description: 'an empty TwiML <Response/> (keywords and anything else alike)',
            content: { 'text/xml': { schema: { type: 'string' } } },
          },
          403: problem('invalid_signature'),
        },
      },
    },
    async (req, reply) => {
      const form = verifiedTwilioForm(req, o.authToken, o.inboundUrl)
      const deps = { store: o.store, times: o.times, clock: o.clock }
      const done = await applySmsKeyword(deps, form as InboundSms, String(req.id))
      // Never the number nor the text: what happened and to how many companies.
      if (done.action) req.log.info(done, 'sms keyword')
      return reply.code(200).type('text/xml; charset=utf-8').send(EMPTY_TWIML)
    },
  )
}
