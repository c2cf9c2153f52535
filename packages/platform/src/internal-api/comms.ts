import { Type, type Static } from '@sinclair/typebox'
import { SINGLE_LINE, Uuid } from '../schemas'
import { command, internalEndpoints } from './define'

/**
 * A message another service sends a patient through comms on its caller's behalf (documents: a
 * consent's link). comms picks the recipient (the guardian of a patient who requires one), the
 * channel when none is given and the address, and applies consent and the messaging limits as to
 * any message.
 */
export const InternalMessage = Type.Object(
  {
    patient_id: Uuid,
    channel: Type.Optional(Type.Union([Type.Literal('email'), Type.Literal('sms')])),
    subject: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: SINGLE_LINE })),
    body: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false, title: 'InternalMessage' },
)
export type InternalMessage = Static<typeof InternalMessage>

/** The comms service's internal endpoints. */
export default internalEndpoints('comms', {
  /** Queues the message (202, the message's id and status), or says why not as `POST /comms/send` would. */
  send: command({
    path: '/internal/comms/send',
    operationId: 'internalSendMessage',
    summary: 'Queue a message to a patient or their guardian (service to service)',
    params: Type.Object({}),
    body: InternalMessage,
    ok: 202,
    answer: Type.Object({ id: Uuid, status: Type.String() }),
    refusals: {
      400: 'invalid',
      422: 'refused',
      429: 'over_limit',
    },
  }),
  /**
   * The first instant at or after `at` when the company's messages may go out (DESIGN.md section
   * 20): `at` itself, or the end of the reminder policy's quiet hours in `time_zone`.
   */
  sendWindow: command({
    path: '/internal/comms/send-window',
    operationId: 'internalSendWindow',
    summary: "When a message may go out, after the company's quiet hours (service to service)",
    callers: ['appointments'],
    params: Type.Object({}),
    body: Type.Object(
      { at: Type.String({ format: 'date-time' }), time_zone: Type.String({ minLength: 1, maxLength: 64 }) },
      { additionalProperties: false },
    ),
    ok: 200,
    answer: Type.Object({ at: Type.String({ description: 'RFC 3339 UTC' }) }),
    refusals: { 400: 'invalid' },
  }),
})
