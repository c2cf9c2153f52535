import { ValidationFailed } from '../../src/errors'
import {
  FHIR_SEARCH_PARAMS,
  PATIENT_COMPARTMENT,
  centerOfLocationId,
  dateRange,
  isFhirPath,
  locationIdOf,
  operationOutcome,
  parseSearch,
  searchsetBundle,
} from '../../src/fhir'
import { NotFound } from '../../src/errors'
import { fhirProblems } from '../../src/testing/fhir-validator'

const errorsOf = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    if (err instanceof ValidationFailed) return err.errors ?? []
    throw err
  }
  throw new Error('no error')
}

describe('FHIR dates (DESIGN 19: prefixes eq gt ge lt le, precision year to instant)', () => {
  it.each([
    ['2026', '2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2026-02', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    ['2026-12-31', '2026-12-31T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2026-03-01T10:00+01:00', '2026-03-01T09:00:00.000Z', '2026-03-01T09:01:00.000Z'],
    ['2026-03-01T10:00:05Z', '2026-03-01T10:00:05.000Z', '2026-03-01T10:00:06.000Z'],
    ['2026-03-01T10:00:05.25Z', '2026-03-01T10:00:05.250Z', '2026-03-01T10:00:05.260Z'],
  ])('%s is [%s, %s)', (value, start, end) => {
    const r = dateRange(value)!
    expect([r.start.toISOString(), r.end.toISOString()]).toEqual([start, end])
  })

  it.each(['2026-02-30', '2026-13', '26-01-01', '2026-03-01T10:00', 'yesterday', '2026-03-01T25:00Z'])(
    '%s is no date',
    (value) => expect(dateRange(value)).toBeNull(),
  )

  it('each prefix bounds the half-open range as FHIR defines it', () => {
    const day = (p: string) => parseSearch('Appointment', { date: `${p}2026-05-10` }).dates('date')
    const start = '2026-05-10T00:00:00.000Z'
    const end = '2026-05-11T00:00:00.000Z'
    expect(day('')).toEqual([
      { op: '>=', at: start },
      { op: '<', at: end },
    ])
    expect(day('eq')).toEqual(day(''))
    expect(day('gt')).toEqual([{ op: '>=', at: end }])
    expect(day('ge')).toEqual([{ op: '>=', at: start }])
    expect(day('lt')).toEqual([{ op: '<', at: start }])
    expect(day('le')).toEqual([{ op: '<', at: end }])
    expect(errorsOf(() => day('ne'))).toEqual([
      { path: '/date', message: expect.stringContaining('prefix ne') },
    ])
    expect(errorsOf(() => day('sa'))).toEqual([
      { path: '/date', message: expect.stringContaining('prefix sa') },
    ])
  })

  it('repeated date parameters all hold (a range)', () => {
    const s = parseSearch('Encounter', { date: ['ge2026-01-01', 'lt2026-02-01'] })
    expect(s.dates('date')).toEqual([
      { op: '>=', at: '2026-01-01T00:00:00.000Z' },
      { op: '<', at: '2026-02-01T00:00:00.000Z' },
    ])
  })
})

describe('parseSearch: every parameter read, none ignored', () => {
  it('refuses an unknown parameter, a modifier, an empty value, each naming it, all at once', () => {
    expect(
      errorsOf(() => parseSearch('Patient', { colour: 'blue', 'name:exact': 'Ana', family: '' })),
    ).toEqual([
      { path: '/colour', message: 'is not a search parameter of Patient (see /fhir/R4/metadata)' },
      { path: '/name:exact', message: 'modifier :exact is not supported' },
      { path: '/family', message: 'must not be empty' },
    ])
    // A parameter of another type is unknown here.
    expect(errorsOf(() => parseSearch('Patient', { practitioner: 'x' }))[0]!.path).toBe('/practitioner')
  })

  it('reads tokens with and without a system, alternatives by comma, occurrences apart', () => {
    const s = parseSearch('Appointment', { status: ['booked,arrived', 'booked'] })
    expect(s.tokens('status')).toEqual([
      [
        { system: null, code: 'booked' },
        { system: null, code: 'arrived' },
      ],
      [{ system: null, code: 'booked' }],
    ])
    const o = parseSearch('Observation', { code: 'http://loinc.org|56844-4,|x' })
    expect(o.tokens('code')[0]).toEqual([
      { system: 'http://loinc.org', code: '56844-4' },
      { system: '', code: 'x' },
    ])
  })

  it('reads references as Type/id, a bare id as the parameter’s type, and refuses another type', () => {
    expect(parseSearch('Appointment', { patient: 'Patient/p1' }).references('patient')).toEqual([
      [{ type: 'Patient', id: 'p1' }],
    ])
    expect(parseSearch('Appointment', { patient: 'p1' }).references('patient')).toEqual([
      [{ type: 'Patient', id: 'p1' }],
    ])
    expect(
      parseSearch('Appointment', { patient: 'https://x.example/fhir/R4/Patient/p1' }).references('patient'),
    ).toEqual([[{ type: 'Patient', id: 'p1' }]])
    expect(errorsOf(() => parseSearch('Appointment', { patient: 'Practitioner/p1' }))).toEqual([
      { path: '/patient', message: 'must name a Patient' },
    ])
    expect(errorsOf(() => parseSearch('AuditEvent', { entity: 'p1' }))).toEqual([
      { path: '/entity', message: 'must name its type (`<Type>/<id>`)' },
    ])
  })

  it('_count 0..1000 (default 50), _sort on _lastUpdated either way, _id as the intersection of its occurrences', () => {
    expect(parseSearch('Patient', {}).count).toBe(50)
    expect(parseSearch('Patient', { _count: '0' }).count).toBe(0)
    expect(parseSearch('Patient', { _count: '1000' }).count).toBe(1000)
    for (const bad of ['1001', '-1', '2.5', 'ten'])
      expect(errorsOf(() => parseSearch('Patient', { _count: bad }))[0]!.path).toBe('/_count')
    expect(errorsOf(() => parseSearch('Patient', { _count: ['1', '2'] }))).toEqual([
      { path: '/_count', message: 'must be given once' },
    ])
    expect(parseSearch('Patient', { _sort: '-_lastUpdated' }).order).toBe('desc')
    expect(parseSearch('Patient', { _sort: '_lastUpdated' }).order).toBe('asc')
    expect(errorsOf(() => parseSearch('Patient', { _sort: 'family' }))[0]!.path).toBe('/_sort')
    expect(parseSearch('Patient', { _id: ['a,b,c', 'b,c,d'] }).ids).toEqual(['b', 'c'])
    expect(parseSearch('Patient', {}).ids).toBeNull()
    expect(parseSearch('Patient', { _format: 'json' }).count).toBe(50)
    expect(errorsOf(() => parseSearch('Patient', { _format: 'xml' }))[0]!.path).toBe('/_format')
  })

  it('keeps the query for links, without the cursor', () => {
    const s = parseSearch('Patient', { family: 'García', _count: '2', _cursor: 'abc' })
    expect(s.cursor).toBe('abc')
    expect(new URLSearchParams(s.query).get('family')).toBe('García')
    expect(s.query).not.toContain('_cursor')
  })

  it('_total: accurate (the default) or none, which the Bundle then leaves out (bulk paging counts nothing)', () => {
    expect(parseSearch('Patient', {}).total).toBe('accurate')
    const none = parseSearch('Patient', { _total: 'none', _count: '1' })
    expect(none.total).toBe('none')
    expect(errorsOf(() => parseSearch('Patient', { _total: 'estimate' }))[0]!.path).toBe('/_total')
    const bundle = searchsetBundle(undefined, 'Patient', none, {
      resources: [],
      total: undefined,
      next: null,
    })
    expect(bundle).not.toHaveProperty('total')
    expect(bundle.link[0]!.url).toBe('/fhir/R4/Patient?_total=none&_count=1')
    expect(fhirProblems(bundle)).toEqual([])
  })
})

describe('searchset Bundles and OperationOutcomes', () => {
  it('a Bundle with total, self and next links under the client’s base, each entry with its fullUrl; valid', () => {
    const s = parseSearch('Patient', { family: 'Ruiz', _count: '1' })
    const patient = { resourceType: 'Patient' as const, id: 'p1', name: [{ family: 'Ruiz' }] }
    const bundle = searchsetBundle('https://h.example/api/fhir/R4', 'Patient', s, {
      resources: [patient],
      total: 2,
      next: 'CUR',
    })
    expect(bundle.total).toBe(2)
    expect(bundle.link).toEqual([
      { relation: 'self', url: 'https://h.example/api/fhir/R4/Patient?family=Ruiz&_count=1' },
      { relation: 'next', url: 'https://h.example/api/fhir/R4/Patient?family=Ruiz&_count=1&_cursor=CUR' },
    ])
    expect(bundle.entry[0]!.fullUrl).toBe('https://h.example/api/fhir/R4/Patient/p1')
    expect(fhirProblems(bundle)).toEqual([])
  })

  it('an error as an OperationOutcome: the issue type of its status, our code, one issue per field; valid', () => {
    const notFound = operationOutcome(new NotFound('No Patient x'), 'req-1')
    expect(notFound.issue).toEqual([
      {
        severity: 'error',
        code: 'not-found',
        details: { coding: [expect.objectContaining({ code: 'not_found' })], text: 'No Patient x' },
      },
    ])
    const invalid = operationOutcome(
      new ValidationFailed([
        { path: '/colour', message: 'is not a search parameter of Patient' },
        { path: '/_count', message: 'must be an integer' },
      ]),
      'req:2',
    )
    expect(invalid.issue!.map((i) => [i.code, i.details!.text])).toEqual([
      ['invalid', 'colour is not a search parameter of Patient'],
      ['invalid', '_count must be an integer'],
    ])
    for (const o of [notFound, invalid]) expect(fhirProblems(o as never)).toEqual([])
  })

  it('knows a FHIR path under either API base, and nothing else', () => {
    for (const p of ['/fhir/R4/Patient', '/api/fhir/R4/Patient?x=1', '/api/3/fhir/R4/metadata', '/api/fhir'])
      expect([p, isFhirPath(p)]).toEqual([p, true])
    for (const p of ['/patients', '/api/patients/fhir', '/api/fhirx', '/api/4/fhir/R4'])
      expect([p, isFhirPath(p)]).toEqual([p, false])
  })

  it('a center code as a Location id and back, for every code a center may have', () => {
    for (const code of ['ALM1', 'MAD_1', 'a-b_c', '_'])
      expect(centerOfLocationId(locationIdOf(code))).toBe(code)
    expect(locationIdOf('MAD_1')).toMatch(/^[A-Za-z0-9\-.]{1,64}$/)
  })

  it('the patient compartment is every type with a patient parameter', () => {
    expect([...PATIENT_COMPARTMENT].sort()).toEqual(
      Object.entries(FHIR_SEARCH_PARAMS)
        .filter(([, p]) => 'patient' in p)
        .map(([t]) => t)
        .sort(),
    )
    expect(PATIENT_COMPARTMENT).toContain('Appointment')
  })
})
