import { ValidationFailed } from '@clinic/platform'
import { exportRequest, levelTypes } from '../../src/export/kickoff'
import { scopesNeeded } from '../../src/scopes'

const ALL = [
  'patients:read',
  'appointments:read',
  'clinical:read',
  'documents:read',
  'consents:read',
  'comms:read',
  'audit:read',
]
const params = (o: Record<string, string[]>) => new Map(Object.entries(o))
const problems = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationFailed)
    return (err as ValidationFailed).errors!.map((e) => e.path)
  }
  throw new Error('no error')
}

describe('a Bulk Data kick-off (DESIGN.md section 19)', () => {
  it('exports every type the level has and the token reads, never Slot or Binary', () => {
    expect(levelTypes('system')).toEqual(
      expect.arrayContaining(['Organization', 'Location', 'Patient', 'AuditEvent']),
    )
    expect(levelTypes('system')).not.toEqual(expect.arrayContaining(['Slot']))
    expect(levelTypes('system')).not.toContain('Binary')
    // A patient's compartment only: no Practitioner, no AuditEvent, no Organization.
    expect(levelTypes('patient')).toContain('Patient')
    expect(levelTypes('patient')).toContain('Observation')
    for (const t of ['Practitioner', 'Schedule', 'AuditEvent', 'Organization', 'Location'])
      expect(levelTypes('group')).not.toContain(t)
    expect(exportRequest('system', params({}), ['patients:read']).types).toEqual([
      'Organization',
      'Location',
      'Patient',
    ])
    expect(exportRequest('system', params({}), ALL).types).toEqual(levelTypes('system'))
  })

  it('keeps the level’s order, each type once, and reads _since to the millisecond', () => {
    const r = exportRequest(
      'patient',
      params({ _type: ['Observation,Patient', 'Patient'], _since: ['2026-12-06T10:00:00+01:00'] }),
      ALL,
    )
    expect(r.types).toEqual(['Patient', 'Observation'])
    expect(r.since!.toISOString()).toBe('2026-12-06T09:00:00.000Z')
  })

  it('is 400 naming each parameter it does not take, and 403 naming the scope of a type the token may not read', () => {
    expect(
      problems(() =>
        exportRequest(
          'system',
          params({
            _typeFilter: ['Patient?name=x'],
            _elements: ['id'],
            _outputFormat: ['text/csv'],
            _since: ['2026-12-06'],
            _count: ['10'],
            _type: ['Slot'],
          }),
          ALL,
        ),
      ),
    ).toEqual(['/_typeFilter', '/_elements', '/_outputFormat', '/_since', '/_count', '/_type'])
    expect(problems(() => exportRequest('patient', params({ _type: ['Practitioner'] }), ALL))).toEqual([
      '/_type',
    ])
    expect(() =>
      exportRequest('system', params({ _type: ['Patient,Observation'] }), ['patients:read']),
    ).toThrow('clinical:read')
    for (const f of ['application/fhir+ndjson', 'application/ndjson', 'ndjson'])
      expect(exportRequest('system', params({ _outputFormat: [f] }), ALL).types.length).toBeGreaterThan(0)
  })

  it('needs fhir:export on every export path (kick-off at each level, status, files)', () => {
    for (const [method, path] of <Array<[string, string]>>[
      ['GET', '/api/fhir/R4/$export'],
      ['POST', '/api/3/fhir/R4/$export'],
      ['GET', '/api/fhir/R4/Patient/$export'],
      ['POST', '/api/fhir/R4/Group/ALM1/$export'],
      ['GET', '/api/fhir/R4/$export/0190c5a0-0000-7000-8000-00000000abcd'],
      ['DELETE', '/api/fhir/R4/$export/0190c5a0-0000-7000-8000-00000000abcd'],
      ['GET', '/api/fhir/R4/$export/0190c5a0-0000-7000-8000-00000000abcd/1.ndjson'],
      ['GET', '/api/fhir/R4/%24export'],
    ])
      expect({ method, path, scopes: scopesNeeded(method, path) }).toEqual({
        method,
        path,
        scopes: ['fhir:export'],
      })
    // A read is still its type's.
    expect(scopesNeeded('GET', '/api/fhir/R4/Patient/x')).toEqual(['patients:read'])
  })
})
