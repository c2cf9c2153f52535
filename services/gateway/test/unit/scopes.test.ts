import { readFileSync } from 'node:fs'
import path from 'node:path'
import { mergeOpenApi, type OpenApi } from '../../src/routes/docs'
import { OPERATION_SCOPES, SCOPES, operationScope, scopesNeeded } from '../../src/scopes'
import { operationsOf, type Json } from '../../src/openapi/types'

/** The committed contract: the operations every service documents (the e2e suite keeps it current). */
const DOC = JSON.parse(
  readFileSync(path.resolve(__dirname, '../../../../docs/openapi.json'), 'utf8'),
) as OpenApi

/** `GET /patients` for every operation that needs a token and serves data (not the 501 areas). */
const securedOperations = (doc: OpenApi) =>
  [...operationsOf(doc)]
    .filter(([, , op]) => !(Array.isArray(op.security) && op.security.length === 0))
    .filter(([, , op]) => !op.tags?.includes('planned'))
    .map(([p, method]) => `${method.toUpperCase()} ${p}`)

describe('the route table (scopes.ts)', () => {
  it('names a scope for every operation of the merged document, and for nothing else', () => {
    const documented = securedOperations(DOC).sort()
    expect(documented.length).toBeGreaterThan(30)
    // A new operation without a scope fails here, naming it; so does a scope of one that is gone. A
    // read of a FHIR type has its type's scope (services.json `fhir`), not an entry of the table.
    expect(documented.filter((op) => operationScope(op) === undefined)).toEqual([])
    expect(Object.keys(OPERATION_SCOPES).filter((op) => !documented.includes(op))).toEqual([])
    for (const scope of Object.values(OPERATION_SCOPES)) expect(SCOPES).toContain(scope)
  })

  it('needs no scope on public operations (provider callbacks, health)', () => {
    const open = [...operationsOf(DOC)]
      .filter(([, , op]) => Array.isArray(op.security) && op.security.length === 0)
      .map(([p, method]) => `${method.toUpperCase()} ${p}`)
    expect(open).toEqual(expect.arrayContaining(['POST /comms/webhooks/twilio', 'GET /health']))
    for (const op of open) expect(OPERATION_SCOPES).not.toHaveProperty(op)
  })

  it('gives each family the scopes DESIGN.md section 13 names: reads read, writes write', () => {
    for (const [op, scope] of Object.entries(OPERATION_SCOPES)) {
      const [method, p] = op.split(' ') as [string, string]
      const family = p.split('/')[1]!
      const read = method === 'GET'
      // A family the table below does not name is read with `<family>:read` and written with
      // `<family>:write` (`-` as `_`), as section 13 asks of a service added after it.
      const area = family.replace(/-/g, '_')
      const named: Record<string, string> = {
        patients: read ? 'patients:read' : 'patients:write',
        appointments: read ? 'appointments:read' : 'appointments:write',
        practitioners: read ? 'appointments:read' : 'appointments:write',
        // Sending, and writing messaging settings (consent, the reminder policy), is comms:send.
        comms: read ? 'comms:read' : 'comms:send',
        audit: 'audit:read',
        webhooks: 'webhooks:manage',
        events: 'events:read',
        // Signing and amending a clinical record is clinical:sign (DESIGN.md section 14).
        clinical: /\/(sign|amendments)$/.test(p)
          ? 'clinical:sign'
          : read
            ? 'clinical:read'
            : 'clinical:write',
        documents: read ? 'documents:read' : 'documents:write',
        consents: read ? 'consents:read' : 'consents:write',
      }
      const expected = named[family] ?? (read ? `${area}:read` : `${area}:write`)
      expect([op, scope]).toEqual([op, expected])
    }
  })
})

describe('scopesNeeded', () => {
  const ID = '0190c5a0-1234-7abc-8def-0123456789ab'
  it.each([
    ['GET', '/api/patients', ['patients:read']],
    ['GET', '/api/3/patients?q=ana&codalmacen=ALM1', ['patients:read']],
    ['GET', '/api/patients/', ['patients:read']],
    ['HEAD', `/api/patients/${ID}`, ['patients:read']],
    ['POST', '/api/3/patients', ['patients:write']],
    ['PATCH', `/api/patients/${ID}`, ['patients:write']],
    ['GET', '/api/appointments/availability?limit=1', ['appointments:read']],
    ['POST', '/api/appointments/holds', ['appointments:write']],
    ['DELETE', `/api/appointments/holds/${ID}`, ['appointments:write']],
    ['POST', `/api/practitioners/dra-ana/time-off`, ['appointments:write']],
    ['POST', '/api/comms/send', ['comms:send']],
    ['PUT', '/api/comms/preferences', ['comms:send']],
    ['PUT', '/api/comms/reminder-policy', ['comms:send']],
    ['GET', '/api/comms/reminders', ['comms:read']],
    ['GET', '/api/audit/events', ['audit:read']],
    ['POST', `/api/webhooks/deliveries/${ID}/retry`, ['webhooks:manage']],
    ['GET', '/api/3/events?after=feed.1', ['events:read']],
    // Decoded as the routers decode it.
    ['GET', '/api/p%61tients', ['patients:read']],
    // Bulk Data: the kick-off at each level, the status, a file (then each type's own, kickoff.ts).
    ['GET', '/api/fhir/R4/$export', ['fhir:export']],
    ['POST', '/api/fhir/R4/Patient/$export', ['fhir:export']],
    ['GET', '/api/fhir/R4/Group/ALM1/$export', ['fhir:export']],
    ['GET', `/api/fhir/R4/%24export/${ID}`, ['fhir:export']],
    ['DELETE', `/api/3/fhir/R4/$export/${ID}`, ['fhir:export']],
    ['GET', `/api/fhir/R4/$export/${ID}/1.ndjson`, ['fhir:export']],
    // A deeper path ending so is no kick-off: the type's read.
    ['GET', '/api/fhir/R4/Patient/a/b/$export', ['patients:read']],
  ])('%s %s needs %j', (method, url, scopes) => {
    expect(scopesNeeded(method, url)).toEqual(scopes)
  })

  it.each([
    ['DELETE', `/api/patients/${ID}`],
    ['GET', '/api/patients/x/y/z'],
    ['POST', '/api/comms/messages'],
    ['GET', '/api/comms/webhooks/twilio'],
    ['GET', `/api/patients/${ID}/..%2F..%2Faudit%2Fevents`],
    ['GET', '/api/patients/%E0%A4%A'],
    ['GET', '/api/patients//'],
  ])('%s %s, no operation of a routed family, needs every scope (fails closed)', (method, url) => {
    expect(scopesNeeded(method, url)).toEqual(SCOPES)
  })

  it.each([
    ['GET', '/api/health'],
    ['GET', '/api/openapi.json'],
    ['GET', '/api/docs/static/index.html'],
    ['GET', '/api/3/nothing-here'],
    ['GET', '/p/a/token'],
    ['GET', '/patients'],
  ])('%s %s needs none (not a routed family)', (method, url) => {
    expect(scopesNeeded(method, url)).toEqual([])
  })
})

describe('operationScope', () => {
  it("is the route table's, and undefined for an operation neither the table nor a FHIR type names", () => {
    expect(operationScope('GET /patients/{id}')).toBe('patients:read')
    expect(operationScope('POST /clinical/exams/{id}/sign')).toBe('clinical:sign')
    expect(operationScope('GET /fhir/R4/NoSuchType/{id}')).toBeUndefined()
    expect(operationScope('DELETE /patients/{id}')).toBeUndefined()
  })

  it("is a FHIR type's scope (services.json fhir) for its reads, as the gateway asks it; null for any", () => {
    const platform = jest.requireActual<typeof import('@clinic/platform')>('@clinic/platform')
    const list = platform.serviceList()
    const fhir = { ...list.services[0]!, fhir: { UnitTestFlag: 'patients:read', UnitTestBasic: 'any' } }
    jest.isolateModules(() => {
      jest.doMock('@clinic/platform', () => ({
        ...platform,
        serviceList: () => ({ ...list, services: [fhir, ...list.services.slice(1)] }),
      }))
      const scopes = jest.requireActual<typeof import('../../src/scopes')>('../../src/scopes')
      expect(scopes.operationScope('GET /fhir/R4/UnitTestFlag/{id}')).toBe('patients:read')
      expect(scopes.operationScope('GET /fhir/R4/UnitTestFlag')).toBe('patients:read')
      expect(scopes.scopesNeeded('GET', `/api/fhir/R4/UnitTestFlag/x`)).toEqual(['patients:read'])
      expect(scopes.operationScope('GET /fhir/R4/UnitTestBasic/{id}')).toBeNull()
      expect(scopes.scopesNeeded('GET', `/api/fhir/R4/UnitTestBasic/x`)).toEqual([])
      expect(scopes.operationScope('POST /fhir/R4/UnitTestFlag')).toBeUndefined()
    })
    jest.dontMock('@clinic/platform')
  })
})

describe('the merged document', () => {
  const json = (schema: Json) => ({ content: { 'application/json': { schema } } })
  const doc = () =>
    mergeOpenApi('261122.01', {
      patients: {
        openapi: '3.1.0',
        paths: {
          '/patients': {
            get: { operationId: 'listPatients', description: 'Newest first.', responses: {} },
            post: {
              operationId: 'createPatient',
              responses: { '403': { description: 'center_forbidden', ...json({ type: 'object' }) } },
            },
          },
          '/patients/{id}/secret': { get: { operationId: 'notInTheTable', responses: {} } },
        },
      },
    })

  it("writes each operation's scope as x-scope, in its description and its 403", () => {
    const paths = doc().paths!
    const list = paths['/patients']!.get!
    expect(list['x-scope']).toBe('patients:read')
    expect(list.description).toBe(
      'Newest first.\n\nNeeds the token scope `patients:read` (else 403 insufficient_scope).',
    )
    expect(list.responses!['403']).toEqual({ $ref: '#/components/responses/Forbidden' })
    const create = paths['/patients']!.post!
    expect(create['x-scope']).toBe('patients:write')
    expect(create.responses!['403']!.description).toBe(
      'insufficient_scope: the token lacks patients:write; or center_forbidden',
    )
    expect(doc().components!.responses!.Forbidden).toMatchObject({
      description: expect.stringContaining('insufficient_scope'),
    })
  })

  it('leaves x-scope off what the table lacks and public operations', () => {
    const paths = doc().paths!
    expect(paths['/patients/{id}/secret']!.get).not.toHaveProperty('x-scope')
    expect(paths['/health']!.get).not.toHaveProperty('x-scope')
  })
})
