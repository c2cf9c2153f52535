import { canonicalJson, makeEvent } from '@clinic/platform/core'
import { createHash } from 'node:crypto'
import { appointmentEventData, testPrincipal } from '@clinic/platform/testing'
import {
  computeHash,
  GENESIS_HASH,
  sealEvent,
  toAuditDraft,
  type AuditEvent,
} from '../../src/domain/audit-event'
import { domainEvent, httpEvent, patientData } from '../helpers'

describe('toAuditDraft', () => {
  const principal = testPrincipal({ username: 'alice' })

  it('maps a domain event: action, resource, actor, request, changes by name only', () => {
    const data = { ...patientData(), changes: ['email', 'phone'] }
    const event = domainEvent('patient.updated', data, { principal })
    const draft = toAuditDraft(event)
    expect(draft).toEqual({
      idempresa: principal.companyId,
      id: event.id,
      occurred_at: event.time,
      action: 'patient.updated',
      outcome: 'success',
      resource_type: 'patient',
      resource_id: data.id,
      codalmacen: 'ALM1',
      actor: { user_id: principal.userId, username: 'alice', token_id: principal.tokenId },
      request_id: event.requestid,
      source: 'clinic/patients',
      http: null,
      changes: ['email', 'phone'],
    })
    // No value of the patient reaches the record.
    const stored = JSON.stringify(draft)
    for (const value of [data.first_name, data.last_name, data.email!, data.phone!])
      expect(stored).not.toContain(value)
  })

  it('names comms events after the message and leaves changes null when the event has none', () => {
    const draft = toAuditDraft(
      domainEvent(
        'comms.message.sent',
        {
          id: 'm-1',
          patient_id: 'p-1',
          appointment_id: null,
          channel: 'sms',
          recipient_role: 'guardian',
          status: 'sent',
        },
        { principal, subject: 'm-1' },
      ),
    )
    expect(draft).toMatchObject({
      action: 'comms.message.sent',
      resource_type: 'message',
      resource_id: 'm-1',
      changes: null,
    })
    expect(
      toAuditDraft(
        domainEvent('appointment.checked_in', appointmentEventData({ id: 'a-1', patient_id: 'p-1' }), {
          principal,
        }),
      ),
    ).toMatchObject({ resource_type: 'appointment', resource_id: 'a-1', outcome: 'success' })
  })

  it("shows a patient's answer from a link (comms calls as `patient-link`, no user, no token) under that name", () => {
    const link = testPrincipal({ userId: '', username: 'patient-link', tokenId: '', companyCenters: [] })
    const data = {
      id: 'a-1',
      patient_id: 'p-1',
      version: 2,
      changes: ['status'],
      old_status: 'scheduled',
      new_status: 'confirmed',
    }
    expect(toAuditDraft(domainEvent('appointment.updated', data, { principal: link }))).toMatchObject({
      action: 'appointment.updated',
      resource_id: 'a-1',
      actor: { user_id: null, username: 'patient-link', token_id: null },
      changes: ['status'],
    })
  })

  it('names webhook endpoint events after the endpoint (webhook_endpoint, as the /webhooks family)', () => {
    for (const type of [
      'webhooks.endpoint.created',
      'webhooks.endpoint.updated',
      'webhooks.endpoint.deleted',
      'webhooks.endpoint.disabled',
    ] as const) {
      const data = { id: 'w-1', status: 'disabled', disabled_reason: 'gone', version: 2, changes: ['status'] }
      expect(
        toAuditDraft(domainEvent(type, data, { principal, source: 'clinic/webhooks', codalmacen: null })),
      ).toMatchObject({
        action: type,
        outcome: 'success',
        resource_type: 'webhook_endpoint',
        resource_id: 'w-1',
        codalmacen: null,
        source: 'clinic/webhooks',
        changes: ['status'],
      })
    }
  })

  it('records a failed message, and a receipt saying undelivered, as failures', () => {
    type MessageEventType =
      'comms.message.queued' | 'comms.message.sent' | 'comms.message.failed' | 'comms.message.delivered'
    const message = (type: MessageEventType, status: string) =>
      toAuditDraft(
        domainEvent(
          type,
          {
            id: 'm-2',
            patient_id: 'p-1',
            appointment_id: null,
            channel: 'sms',
            recipient_role: 'patient',
            status,
          },
          { principal, subject: 'm-2' },
        ),
      ).outcome
    expect(message('comms.message.queued', 'queued')).toBe('success')
    expect(message('comms.message.sent', 'sent')).toBe('success')
    expect(message('comms.message.failed', 'failed')).toBe('failure')
    expect(message('comms.message.delivered', 'delivered')).toBe('success')
    expect(message('comms.message.delivered', 'undelivered')).toBe('failure')
  })

  it('records a message sent to the patient over the guardian rule (override_guardian) as a change', () => {
    const data = {
      id: 'm-3',
      patient_id: 'p-1',
      appointment_id: null,
      channel: 'email',
      recipient_role: 'patient',
      status: 'queued',
    }
    const queued = (extra: object) =>
      toAuditDraft(domainEvent('comms.message.queued', { ...data, ...extra }, { principal, subject: 'm-3' }))
    expect(queued({ override_guardian: true })).toMatchObject({
      action: 'comms.message.queued',
      resource_type: 'message',
      resource_id: 'm-3',
      outcome: 'success',
      changes: ['override_guardian'],
    })
    expect(queued({}).changes).toBeNull()
    // A suppressed message (the address opted out) is on the trail too, under its own action.
    expect(
      toAuditDraft(
        domainEvent(
          'comms.message.suppressed',
          { ...data, status: 'suppressed' },
          { principal, subject: 'm-3' },
        ),
      ),
    ).toMatchObject({ action: 'comms.message.suppressed', resource_type: 'message', outcome: 'success' })
  })

  it('names consent changes after the preference, with who changed it and what (comms.preference.updated)', () => {
    const data = {
      preference_id: '155a56c9-5d3c-5b93-834a-89eeb7094948',
      channel: 'sms',
      opted_out: true,
      source: 'api',
      changes: ['opted_out'],
    }
    const byApi = toAuditDraft(
      domainEvent('comms.preference.updated', data, {
        principal,
        subject: data.preference_id,
        codalmacen: null,
        source: 'clinic/comms',
      }),
    )
    expect(byApi).toMatchObject({
      action: 'comms.preference.updated',
      outcome: 'success',
      resource_type: 'preference',
      resource_id: data.preference_id,
      codalmacen: null,
      actor: { user_id: principal.userId, username: 'alice', token_id: principal.tokenId },
      source: 'clinic/comms',
      http: null,
      changes: ['opted_out'],
    })
    // An inbound STOP or an email's one-click link has no user: the source names the actor.
    const keyword = testPrincipal({ userId: '', username: 'sms-keyword', tokenId: '', companyCenters: [] })
    expect(
      toAuditDraft(
        domainEvent(
          'comms.preference.updated',
          { ...data, source: 'sms_keyword' },
          { principal: keyword, subject: data.preference_id, codalmacen: null },
        ),
      ),
    ).toMatchObject({
      resource_type: 'preference',
      actor: { user_id: null, username: 'sms-keyword', token_id: null },
      changes: ['opted_out'],
    })
  })

  it('maps http.request: access fields, outcome by status, no query string', () => {
    const ok = toAuditDraft(httpEvent(principal, { path: '/api/patients?q=Fakerson', resource_id: 'p-9' }))
    expect(ok).toMatchObject({
      action: 'http.request',
      outcome: 'success',
      resource_type: 'patient',
      resource_id: 'p-9',
      source: 'clinic/gateway',
      http: { method: 'GET', path: '/api/patients', status: 200, duration_ms: 12.5, ip: '203.0.113.9' },
      changes: null,
    })
    for (const status of [401, 403, 404, 500])
      expect(toAuditDraft(httpEvent(principal, { status })).outcome).toBe('failure')
    expect(toAuditDraft(httpEvent(principal, { status: 399 })).outcome).toBe('success')
  })

  it('keeps an unauthenticated request under company 0 with no actor', () => {
    const e = httpEvent(principal, { status: 401, resource_type: null })
    const anonymous = {
      ...e,
      idempresa: 0,
      actorid: undefined,
      actorname: undefined,
      actortokenid: undefined,
    }
    expect(toAuditDraft(anonymous)).toMatchObject({
      idempresa: 0,
      outcome: 'failure',
      resource_type: null,
      actor: { user_id: null, username: null, token_id: null },
    })
  })

  it('maps http.refused (unknown callers per address and minute) with its count, under company 0', () => {
    const e = makeEvent({
      type: 'http.refused',
      source: 'clinic/gateway',
      companyId: 0,
      data: {
        ip: '203.0.113.9',
        count: 1500,
        window_start: '2026-11-23T04:00:00.000Z',
        paths: ['/api/patients'],
      },
    })
    expect(toAuditDraft(e)).toMatchObject({
      idempresa: 0,
      action: 'http.refused',
      outcome: 'failure',
      actor: { user_id: null, username: null, token_id: null },
      http: { status: 401, ip: '203.0.113.9', count: 1500, path: '/api/patients' },
    })
  })

  it('maps http.public (callbacks and preflights per address and minute) with its method, status and count', () => {
    const e = makeEvent({
      type: 'http.public',
      source: 'clinic/gateway',
      companyId: 0,
      data: {
        method: 'POST',
        status: 403,
        ip: '203.0.113.9',
        count: 3,
        window_start: '2026-11-23T04:00:00.000Z',
        paths: ['/api/comms/webhooks/twilio'],
      },
    })
    expect(toAuditDraft(e)).toMatchObject({
      idempresa: 0,
      action: 'http.public',
      outcome: 'failure',
      http: { method: 'POST', status: 403, ip: '203.0.113.9', count: 3, path: '/api/comms/webhooks/twilio' },
    })
    expect(toAuditDraft({ ...e, data: { ...e.data, method: 'OPTIONS', status: 204 } })).toMatchObject({
      outcome: 'success',
      http: { method: 'OPTIONS', status: 204 },
    })
  })

  it('maps token.created and token.revoked (the admin CLI) to the token, named by who ran the command', () => {
    const e = makeEvent({
      type: 'token.revoked',
      source: 'clinic/gateway',
      subject: '0190c5a0-0000-7000-8000-000000000001',
      companyId: 7,
      data: {
        id: '0190c5a0-0000-7000-8000-000000000001',
        user_id: '0190c5a0-0000-7000-8000-000000000002',
        username: 'alice',
        name: null,
        centers: null,
        scopes: ['patients:read'],
        expires_at: null,
        actor: 'ops',
      },
    })
    expect(toAuditDraft({ ...e, actorname: 'ops' })).toMatchObject({
      idempresa: 7,
      action: 'token.revoked',
      outcome: 'success',
      resource_type: 'token',
      resource_id: '0190c5a0-0000-7000-8000-000000000001',
      actor: { user_id: null, username: 'ops', token_id: null },
      http: null,
    })
  })

  it('strips NUL characters, which text columns cannot hold', () => {
    const e = { ...domainEvent('patient.created', patientData()), requestid: 'req\u0000-1' }
    expect(toAuditDraft(e).request_id).toBe('req-1')
  })

  it('keeps instants at millisecond precision in UTC', () => {
    const e = { ...domainEvent('patient.created', patientData()), time: '2026-11-22T10:30:00.123456+01:00' }
    expect(toAuditDraft(e).occurred_at).toBe('2026-11-22T09:30:00.123Z')
  })
})

describe('canonical hash', () => {
  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: null }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":null,"z":1}]},"b":1}',
    )
  })

  const seal = (seq: number, prevHash: string): AuditEvent =>
    sealEvent(toAuditDraft(domainEvent('patient.created', patientData())), {
      seq,
      prevHash,
      recordedAt: new Date('2026-11-22T09:30:00.001Z'),
    })

  it('is sha256 of prev_hash + canonical JSON without the hash, so a third party can recompute it', () => {
    const e = seal(1, GENESIS_HASH)
    expect(e.hash).toMatch(/^[0-9a-f]{64}$/)
    const { hash: _hash, ...rest } = e
    const expected = createHash('sha256')
      .update(GENESIS_HASH + canonicalJson(rest))
      .digest('hex')
    expect(e.hash).toBe(expected)
  })

  it('does not depend on key order and changes with any field, the company included', () => {
    const e = seal(1, GENESIS_HASH)
    const reordered = Object.fromEntries(Object.entries(e).reverse()) as unknown as AuditEvent
    expect(computeHash(reordered)).toBe(e.hash)
    expect(computeHash({ ...e, idempresa: e.idempresa + 1 })).not.toBe(e.hash)
    expect(computeHash({ ...e, action: 'patient.updated' })).not.toBe(e.hash)
    expect(computeHash({ ...e, actor: { ...e.actor, username: 'mallory' } })).not.toBe(e.hash)
    expect(computeHash({ ...e, changes: ['email'] })).not.toBe(e.hash)
    expect(computeHash({ ...e, prev_hash: 'f'.repeat(64) })).not.toBe(e.hash)
  })
})
