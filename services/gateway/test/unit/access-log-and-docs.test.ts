import { resourceOf } from '../../src/access-log'
import { mergeOpenApi, type OpenApi } from '../../src/routes/docs'

const ID = '0190c5a0-1234-7abc-8def-0123456789ab'
const ID2 = '0190c5a0-9999-7abc-8def-0123456789ab'

describe('resourceOf', () => {
  it.each([
    ['/api', null, null],
    ['/api/3', null, null],
    ['/api/health', null, null],
    ['/api/patients', 'patient', null],
    ['/api/3/patients', 'patient', null],
    [`/api/patients/${ID}`, 'patient', ID],
    [`/api/3/patients/${ID}`, 'patient', ID],
    [`/api/3/patients/${ID}/appointments`, 'patient', ID],
    [`/api/appointments/${ID}/check-in`, 'appointment', ID],
    [`/api/3/comms/messages/${ID}`, 'message', ID],
    ['/api/3/audit/events', 'audit_event', null],
    [`/api/3/documents/${ID}`, 'document', ID],
    ['/api/3/patients/not-an-id', 'patient', null],
    [`/api/v2/patients/${ID}`, 'patient', ID],
    [`/api/fhir/R4/Patient/${ID}`, 'patient', ID],
    ['/api/fhir/R4/$export', 'fhir_export', null],
    ['/api/fhir/R4/Group/ALM1/$export', 'fhir_export', null],
    [`/api/3/fhir/R4/$export/${ID}`, 'fhir_export', ID],
    [`/api/fhir/R4/$export/${ID}/2.ndjson`, 'fhir_export', ID],
  ])('%s -> %s %s', (path, type, id) => {
    expect(resourceOf(path)).toEqual({ resource_type: type, resource_id: id })
  })

  it('names the first id on a nested path', () => {
    expect(resourceOf(`/api/3/patients/${ID}/appointments/${ID2}`)).toEqual({
      resource_type: 'patient',
      resource_id: ID,
    })
  })
})

describe('mergeOpenApi', () => {
  const Patient = { title: 'Patient', type: 'object', properties: { id: { type: 'string' } } }
  const json = (schema: object) => ({ content: { 'application/json': { schema } } })
  const patients = {
    openapi: '3.1.0',
    tags: [{ name: 'patients', description: 'Patients of a company' }],
    paths: {
      '/patients': {
        get: { operationId: 'listPatients', responses: { '200': { description: 'Default Response' } } },
        post: {
          operationId: 'createPatient',
          requestBody: json({ title: 'PatientCreate', type: 'object' }),
          responses: {
            '201': {
              description: 'Default Response',
              headers: { etag: { schema: { type: 'string' } } },
              ...json(Patient),
            },
            '409': { description: 'duplicate_national_id', ...json({ type: 'object' }) },
          },
        },
      },
      '/patients/{id}': {
        get: {
          operationId: 'getPatient',
          parameters: [{ in: 'path', name: 'id', required: true, schema: { type: 'string' } }],
          responses: { '200': { description: 'Default Response', ...json(Patient) } },
        },
      },
      '/internal/patients/{id}/contact': { get: { operationId: 'internalContact' } },
    },
  }
  const appointments = {
    openapi: '3.1.0',
    paths: { '/appointments': { post: { operationId: 'createAppointment' } }, '/internal': { get: {} } },
  }
  const merged = () =>
    mergeOpenApi('261122.01', { patients: structuredClone(patients) as OpenApi, appointments, comms: {} })

  it("keeps the services' public paths, leaves /internal out, and adds /health", () => {
    expect(Object.keys(merged().paths!).sort()).toEqual([
      '/appointments',
      '/health',
      '/patients',
      '/patients/{id}',
    ])
    expect(merged().paths!['/health']!.get).toMatchObject({ operationId: 'getHealth', security: [] })
    expect(merged().tags).toEqual(
      expect.arrayContaining([{ name: 'patients', description: 'Patients of a company' }]),
    )
  })

  it('names every titled schema in components and refers to it; two different ones under a title stop it', () => {
    const doc = merged()
    expect(doc.components!.schemas).toMatchObject({ Patient, PatientCreate: { type: 'object' } })
    const created = doc.paths!['/patients']!.post!.responses!['201']!
    expect(created.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Patient' })
    expect(created.description).toBe('The patient')
    const clash = structuredClone(patients)
    clash.paths['/patients/{id}'].get.responses['200'] = {
      description: 'x',
      ...json({ title: 'Patient', type: 'string' }),
    }
    expect(() => mergeOpenApi('261122.01', { patients: clash as OpenApi })).toThrow(
      /two different schemas are named Patient/,
    )
  })

  it('answers every error as problem+json and adds what any operation may meet', () => {
    const ops = merged().paths!
    const create = ops['/patients']!.post!.responses!
    expect(create['409']).toEqual({
      description: 'duplicate_national_id',
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      headers: expect.any(Object),
    })
    // A body: 400, 413, 415; a token: 401, and 403 without its scope; always 429, 500, 503. No path id: no 404.
    expect(Object.keys(create)).toEqual([
      '201',
      '400',
      '401',
      '403',
      '409',
      '413',
      '415',
      '429',
      '500',
      '503',
    ])
    expect(create['400']).toEqual({ $ref: '#/components/responses/ValidationFailed' })
    expect(Object.keys(ops['/patients/{id}']!.get!.responses!)).toContain('404')
    // Public: no 401.
    expect(Object.keys(ops['/health']!.get!.responses!)).toEqual(['200', '429', '503'])
  })

  it('documents the headers of every answer: version and request id always, ETag where a service sends it', () => {
    const headers = merged().paths!['/patients']!.post!.responses!['201']!.headers!
    expect(headers['X-service-Version']).toEqual({ $ref: '#/components/headers/ServiceVersion' })
    expect(headers['X-Request-Id']).toEqual({ $ref: '#/components/headers/RequestId' })
    expect(headers['Idempotent-Replayed']).toEqual({ $ref: '#/components/headers/IdempotentReplayed' })
    expect(headers.ETag).toMatchObject({ required: true })
    expect(merged().components!.headers).toMatchObject({ ServiceVersion: { required: true } })
  })

  it('is OpenAPI 3.1 with the version, both bases as servers and both security schemes', () => {
    const doc = mergeOpenApi('261122.01', {})
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info).toMatchObject({ title: 'Clinic API', version: '261122.01' })
    expect(doc.servers).toEqual([
      expect.objectContaining({ url: '/api' }),
      expect.objectContaining({ url: '/api/3' }),
    ])
    expect(doc.components!.securitySchemes).toEqual({
      serviceToken: { type: 'apiKey', in: 'header', name: 'X-service-Token' },
      basic: expect.objectContaining({ type: 'http', scheme: 'basic' }),
    })
    expect(doc.security).toEqual([{ serviceToken: [] }, { basic: [] }])
  })
})
