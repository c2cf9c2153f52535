import { Type } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

/**
 * A webhook endpoint of an integrator (DESIGN.md section 10), on the audit trail: its id, status and
 * the names of changed fields; never its URL, description or secret. Its resource is named as the
 * gateway's http.request events under /webhooks name it (services.json).
 */
const endpoint = {
  resource: 'webhook_endpoint',
  data: Type.Object({
    id: Type.String(),
    status: Type.String(),
    disabled_reason: Type.Union([Type.String(), Type.Null()]),
    version: Type.Integer(),
    changes: Changes,
  }),
}

export default {
  'webhooks.endpoint.created': endpoint,
  'webhooks.endpoint.updated': endpoint,
  'webhooks.endpoint.deleted': endpoint,
  /** Disabled by the service itself (410 Gone, or 24 h of failed deliveries): `disabled_reason` says which. */
  'webhooks.endpoint.disabled': endpoint,
} satisfies ServiceContracts
