import { Type, type Static } from '@sinclair/typebox'
import { Instant, ListQuery, nullable } from '@clinic/platform/http'
import { OUTCOMES } from '../domain/audit-event'

/** The audit event contract (DESIGN.md section 4): validates queries, filters answers, documents. */
const Text = (description: string) => Type.String({ minLength: 1, maxLength: 200, description })

export const AuditEventSchema = Type.Object(
  {
    id: Type.String({ description: 'the id of the event recorded (UUIDv7)' }),
    occurred_at: Instant,
    recorded_at: Instant,
    action: Type.String({
      description: 'event type, e.g. patient.created, appointment.checked_in, http.request',
    }),
    outcome: Type.Union(OUTCOMES.map((o) => Type.Literal(o))),
    resource_type: nullable(Type.String()),
    resource_id: nullable(Type.String()),
    codalmacen: nullable(Type.String()),
    actor: Type.Object({
      user_id: nullable(Type.String()),
      username: nullable(Type.String()),
      token_id: nullable(Type.String()),
    }),
    request_id: nullable(Type.String()),
    source: Type.String({ description: 'the service that emitted the event, e.g. clinic/patients' }),
    http: nullable(
      Type.Object(
        {
          method: Type.String(),
          path: Type.String(),
          status: Type.Integer(),
          duration_ms: Type.Number(),
          ip: nullable(Type.String()),
          count: Type.Optional(
            Type.Integer({ description: 'http.refused: the requests of that address in that minute' }),
          ),
        },
        {
          description:
            'for access events only: http.request (one request), http.refused (unknown callers, per address and minute)',
        },
      ),
    ),
    changes: nullable(
      Type.Array(Type.String(), { description: 'names of the changed fields, never their values' }),
    ),
    seq: Type.Integer({ minimum: 1, description: "position in the company's hash chain" }),
    hash: Type.String({
      description:
        '"k1." + HMAC-SHA256 (key kept outside the database) of prev_hash + canonical JSON of the event without hash, hex; plain sha256 hex for events recorded before keyed chains',
    }),
    prev_hash: Type.String({
      description: 'hash of the previous event of the company (64 zeros for the first)',
    }),
  },
  { title: 'AuditEvent', additionalProperties: false },
)

export const ListAuditEventsQuery = Type.Object(
  {
    ...ListQuery,
    action: Type.Optional(Text('event type, e.g. patient.updated')),
    resource_type: Type.Optional(Text('e.g. patient, appointment, message')),
    resource_id: Type.Optional(Text('id of the resource')),
    username: Type.Optional(Text("the actor's username")),
    outcome: Type.Optional(Type.Union(OUTCOMES.map((o) => Type.Literal(o)))),
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'occurred at or after this instant (RFC 3339)' }),
    ),
    to: Type.Optional(
      Type.String({ format: 'date-time', description: 'occurred before this instant (RFC 3339)' }),
    ),
  },
  { additionalProperties: false },
)
export type ListAuditEventsInput = Static<typeof ListAuditEventsQuery>
