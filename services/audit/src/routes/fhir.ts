import { fhirRoutes } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import {
  readFhirAuditEvent,
  searchFhirAuditEvents,
  type AuditEventFhirStore,
} from '../domain/fhir-audit-event'

/** FHIR R4 `AuditEvent` read and search (DESIGN.md section 19; scope audit:read, at the gateway). */
export async function auditEventFhirRoutes(app: FastifyInstance, { store }: { store: AuditEventFhirStore }) {
  await fhirRoutes(app, [
    {
      type: 'AuditEvent',
      read: (ctx, id) => readFhirAuditEvent(ctx, store, id),
      search: (ctx, search) => searchFhirAuditEvents(ctx, store, search),
    },
  ])
}
