import {
  makeEvent,
  uuidv7,
  type CloudEvent,
  type EventData,
  type EventType,
  type Principal,
} from '@clinic/platform'
import { testPrincipal } from '@clinic/platform/testing'
import { GENESIS_HASH, sealEvent, toAuditDraft, type AuditEvent } from '../src/domain/audit-event'
import type { ChainAnchor } from '../src/domain/verify-chain'

/** A domain event as a service would emit it, with an actor and a request id. */
export function domainEvent<T extends EventType>(
  type: T,
  data: EventData<T>,
  over: {
    principal?: Principal
    subject?: string
    codalmacen?: string | null
    time?: Date
    source?: string
  } = {},
): CloudEvent<T> {
  const principal = over.principal ?? testPrincipal()
  return makeEvent({
    type,
    source: over.source ?? `clinic/${type.split('.')[0] === 'comms' ? 'comms' : `${type.split('.')[0]}s`}`,
    subject: over.subject ?? (data as { id?: string }).id,
    data,
    companyId: principal.companyId,
    codalmacen: over.codalmacen === undefined ? 'ALM1' : over.codalmacen,
    ctx: { auth: principal, requestId: `req-${uuidv7()}` },
    time: over.time,
  })
}

/** Data of a patient event: fake values, to show that none of them reaches the trail. */
export function patientData(over: Partial<EventData<'patient.created'>> = {}): EventData<'patient.created'> {
  return {
    id: uuidv7(),
    codalmacen: 'ALM1',
    first_name: 'Testina',
    last_name: 'Fakerson',
    email: 'testina@example.invalid',
    phone: '+34600000000',
    preferred_channel: 'email',
    language: 'es',
    requires_legal_guardian: false,
    guardian: null,
    version: 1,
    ...over,
  }
}

export function httpEvent(
  principal: Principal,
  data: Partial<EventData<'http.request'>> = {},
  over: { codalmacen?: string } = {},
): CloudEvent<'http.request'> {
  return makeEvent({
    type: 'http.request',
    source: 'clinic/gateway',
    data: {
      method: 'GET',
      path: '/api/patients',
      status: 200,
      duration_ms: 12.5,
      ip: '203.0.113.9',
      resource_type: 'patient',
      resource_id: null,
      ...data,
    },
    companyId: principal.companyId,
    codalmacen: over.codalmacen,
    ctx: { auth: principal, requestId: `req-${uuidv7()}` },
  })
}

/**
 * `n` patient.created events of `company` sealed into a chain after `anchor` (the genesis by
 * default), with `key` (AUDIT_CHAIN_KEY) or none (plain SHA-256), recorded a second apart.
 */
export function sealedChain(
  company: number,
  n: number,
  anchor: ChainAnchor = { seq: 0, hash: GENESIS_HASH },
  key?: string,
): AuditEvent[] {
  const principal = testPrincipal({ companyId: company })
  const out: AuditEvent[] = []
  let prev = anchor.hash
  for (let i = 1; i <= n; i++) {
    const e = sealEvent(
      toAuditDraft(domainEvent('patient.created', patientData(), { principal })),
      { seq: anchor.seq + i, prevHash: prev, recordedAt: new Date(Date.UTC(2026, 10, 22, 9, 0, i)) },
      key,
    )
    out.push(e)
    prev = e.hash
  }
  return out
}
