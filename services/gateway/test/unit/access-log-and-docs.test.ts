import { resourceOf } from '../../src/access-log'
import { mergeOpenApi } from '../../src/routes/docs'

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
  const patients = {
    openapi: '3.1.0',
    paths: {
      '/patients': { get: { operationId: 'listPatients' } },
      '/patients/{id}': { get: { operationId: 'getPatient' } },
      '/internal/patients/{id}/contact': { get: { operationId: 'internalContact' } },
    },
    components: { schemas: { Patient: { type: 'object' } } },
  }
  const appointments = {
    openapi: '3.1.0',
    paths: { '/appointments': { post: { operationId: 'bookAppointment' } }, '/internal': { get: {} } },
    components: { schemas: { Appointment: { type: 'object' } } },
  }

  it('keeps the public paths of every service and leaves /internal ones out', () => {
    const doc = mergeOpenApi('261122.01', { patients, appointments, comms: {} })
    expect(Object.keys(doc.paths!).sort()).toEqual(['/appointments', '/patients', '/patients/{id}'])
    expect(doc.paths!['/patients/{id}']).toEqual({ get: { operationId: 'getPatient' } })
  })

  it('merges the component schemas', () => {
    const doc = mergeOpenApi('261122.01', { patients, appointments })
    expect(doc.components!.schemas).toEqual({ Patient: { type: 'object' }, Appointment: { type: 'object' } })
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
    expect(doc.paths).toEqual({})
  })
})
