import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { listOf } from '@clinic/platform/http'
import type { AuditEventStore } from '../domain/audit-event-store'
import { listAuditEvents } from '../domain/list-audit-events'
import { AuditEventSchema, ListAuditEventsQuery } from '../schemas/audit-event'

export async function auditEventRoutes(app: FastifyInstance, { store }: { store: AuditEventStore }) {
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
        response: {
          200: listOf(AuditEventSchema, 'AuditEventList'),
        },
      },
    },
    // The response schema serializes only the fields of DESIGN.md (idempresa stays out).
    async (req) => listAuditEvents(req.ctx, store, req.query),
  )
}
