import type { PlannedFamily } from '../families'
import { problemResponse } from './problems'
import type { Json, Operation } from './types'

/** `GET /health`: the gateway's own, public summary of every part (routes/health.ts). */
export const HEALTH_SCHEMA: Json = {
  type: 'object',
  required: ['status', 'version', 'checks', 'down'],
  properties: {
    status: { type: 'string', enum: ['ok', 'degraded'] },
    version: { type: 'string' },
    checks: {
      type: 'object',
      description: 'database, broker and each service: ok or down',
      additionalProperties: { type: 'string', enum: ['ok', 'down'] },
    },
    down: {
      type: 'array',
      items: { type: 'string' },
      description: 'what is not ok, e.g. patients.database, comms.unreachable',
    },
  },
}

export function healthPath(): Record<string, Operation> {
  const summary = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/HealthSummary' } } },
  })
  return {
    get: {
      operationId: 'getHealth',
      summary: 'Health of the whole stack (no token)',
      tags: ['health'],
      security: [],
      responses: {
        '200': summary('Every part is up'),
        '429': { $ref: '#/components/responses/RateLimited' } as never,
        '503': summary('degraded: `down` names what is not ok'),
      },
    },
  }
}

/** An announced area: every request (after authentication) is 501 naming it. */
export function plannedPath(p: PlannedFamily): Record<string, Operation> {
  const name = p.family.replace(/-(.)/g, (_m, c: string) => c.toUpperCase())
  return {
    get: {
      operationId: `${name}NotImplemented`,
      summary: `${p.area.charAt(0).toUpperCase()}${p.area.slice(1)} (announced): 501 not_implemented`,
      description: `Every operation under /${p.family} answers 501 until the area ships (after authentication).`,
      tags: ['planned'],
      // No success to document yet: every answer is the 501 (the default response).
      responses: { default: problemResponse('501', `501 not_implemented: ${p.area} is planned`) },
    },
  }
}
