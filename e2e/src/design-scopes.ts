/**
 * DESIGN.md section 13, restated: the scope each operation of the API needs, written here and not
 * taken from the gateway (its route table, or the `x-scope` it writes into the document), so the e2e
 * scopes suite cannot agree with itself. Nothing imported: scripts/test/new-service.test.ts reads
 * this file of a copy of the repository too, against the document of the service it grew there.
 */

/**
 * DESIGN's scopes by path family: what a read (GET) needs, and what any other method needs.
 * Messaging settings (consent, the reminder policy) are written with `comms:send`.
 */
export const DESIGN_SCOPES: Record<string, { read: string; write?: string }> = {
  patients: { read: 'patients:read', write: 'patients:write' },
  appointments: { read: 'appointments:read', write: 'appointments:write' },
  practitioners: { read: 'appointments:read', write: 'appointments:write' },
  comms: { read: 'comms:read', write: 'comms:send' },
  audit: { read: 'audit:read' },
  webhooks: { read: 'webhooks:manage', write: 'webhooks:manage' },
  events: { read: 'events:read' },
  clinical: { read: 'clinical:read', write: 'clinical:write' },
  documents: { read: 'documents:read', write: 'documents:write' },
  consents: { read: 'consents:read', write: 'consents:write' },
}
/** Where DESIGN names another scope than the family's: signing and amending an exam. */
export const DESIGN_EXCEPTIONS: Record<string, string> = {
  'post /clinical/exams/{id}/sign': 'clinical:sign',
  'post /clinical/exams/{id}/amendments': 'clinical:sign',
}
/**
 * Where DESIGN asks a scope beside the operation's own: a webhook subscription chooses event types,
 * so making or changing one also needs events:read (else webhooks:manage would read every event).
 */
export const DESIGN_ALSO: Record<string, string[]> = {
  'post /webhooks/endpoints': ['events:read'],
  'patch /webhooks/endpoints/{id}': ['events:read'],
}

/** An operation as the document has it: the method in lower case, the path, its first segment. */
interface Op {
  method: string
  path: string
  family: string
}

export const designAlsoOf = (o: Op): string[] => DESIGN_ALSO[`${o.method} ${o.path}`] ?? []

/**
 * DESIGN's scope of an operation. A family the table above does not name is a service's added after
 * it: section 13 reads it with `<family>:read` and writes it with `<family>:write` (`-` as `_`).
 */
export function designScopeOf(o: Op): string | undefined {
  const exception = DESIGN_EXCEPTIONS[`${o.method} ${o.path}`]
  if (exception) return exception
  const named = Object.hasOwn(DESIGN_SCOPES, o.family) ? DESIGN_SCOPES[o.family]! : undefined
  if (named) return o.method === 'get' ? named.read : named.write
  return `${o.family.replace(/-/g, '_')}:${o.method === 'get' ? 'read' : 'write'}`
}
