import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { Instant, ListQuery, listOf, Problem } from '@clinic/platform'
import { auditEventRepository } from '../db/repositories/audit-events'
import { OUTCOMES } from '../domain/audit-event'
import { listAuditEvents } from '../domain/list-audit-events'
import type { Deps } from '../app'

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()])
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
    resource_type: Nullable(Type.String()),
    resource_id: Nullable(Type.String()),
    codalmacen: Nullable(Type.String()),
    actor: Type.Object({
      user_id: Nullable(Type.String()),
      username: Nullable(Type.String()),
      token_id: Nullable(Type.String()),
    }),
    request_id: Nullable(Type.String()),
    source: Type.String({ description: 'the service that emitted the event, e.g. clinic/patients' }),
    http: Type.Union(
      [
        Type.Object({
          method: Type.String(),
          path: Type.String(),
          status: Type.Integer(),
          duration_ms: Type.Number(),
          ip: Nullable(Type.String()),
        }),
        Type.Null(),
      ],
      { description: 'for access events (http.request) only' },
    ),
    changes: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'names of the changed fields, never their values',
    }),
    seq: Type.Integer({ minimum: 1, description: "position in the company's hash chain" }),
    hash: Type.String({ description: 'sha256(prev_hash + canonical JSON of the event without hash), hex' }),
    prev_hash: Type.String({
      description: 'hash of the previous event of the company (64 zeros for the first)',
    }),
  },
  { additionalProperties: false },
)

const ListAuditEventsQuery = Type.Object(
  {
    ...ListQuery,
    action: Type.Optional(Text('event type, e.g. patient.updated')),
    resource_type: Type.Optional(Text('e.g. patient, appointment, message')),
    resource_id: Type.Optional(Text('id of the resource')),
    username: Type.Optional(Text("the actor's username")),
    outcome: Type.Optional(Type.Union(OUTCOMES.map((o) => Type.Literal(o)))),
    from: Type.Optional({ ...Instant, description: 'occurred at or after this instant (RFC 3339)' }),
    to: Type.Optional({ ...Instant, description: 'occurred before this instant (RFC 3339)' }),
  },
  { additionalProperties: false },
)

export async function auditEventRoutes(app: FastifyInstance, { deps }: { deps: Deps }) {
  const repo = auditEventRepository(deps.knex)
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/audit/events',
    {
      schema: {
        tags: ['audit'],
        summary: 'List audit events',
        description:
          "The company's audit trail, newest first: domain events and every request through the gateway. " +
          'Append-only and hash-chained per company (seq, prev_hash, hash).',
        operationId: 'listAuditEvents',
        querystring: ListAuditEventsQuery,
        response: { 200: listOf(AuditEventSchema), 400: Problem, 401: Problem, 403: Problem },
      },
    },
    // The response schema serializes only the fields of DESIGN.md (idempresa stays out).
    async (req) => listAuditEvents(req.ctx, req.query, repo),
  )
}
