import {
  diagnosisErrors,
  findingValues,
  iopErrors,
  minusCylinder,
  refractionErrors,
} from '../../src/domain/finding-rules'

describe('refraction in minus-cylinder form', () => {
  it('transposes a plus cylinder: sphere + cyl, -cyl, axis ± 90', () => {
    expect(minusCylinder({ sphere: -2.25, cylinder: 0.75, axis: 30 })).toEqual({
      sphere: -1.5,
      cylinder: -0.75,
      axis: 120,
    })
    expect(minusCylinder({ sphere: 1, cylinder: 2, axis: 90 })).toEqual({
      sphere: 3,
      cylinder: -2,
      axis: 180,
    })
    expect(minusCylinder({ sphere: 1, cylinder: 2, axis: 180 })).toEqual({
      sphere: 3,
      cylinder: -2,
      axis: 90,
    })
    expect(minusCylinder({ sphere: 0, cylinder: 1.25, axis: 91 })).toEqual({
      sphere: 1.25,
      cylinder: -1.25,
      axis: 1,
    })
  })

  it('keeps a minus cylinder as written, and a sphere alone without axis', () => {
    expect(minusCylinder({ sphere: -3, cylinder: -1, axis: 175 })).toEqual({
      sphere: -3,
      cylinder: -1,
      axis: 175,
    })
    expect(minusCylinder({ sphere: -3 })).toEqual({ sphere: -3, cylinder: 0, axis: null })
    expect(minusCylinder({ sphere: -3, cylinder: 0 })).toEqual({ sphere: -3, cylinder: 0, axis: null })
  })
})

describe('refraction rules beyond the schema', () => {
  it('asks for an axis exactly when there is a cylinder', () => {
    expect(refractionErrors({ sphere: -1, cylinder: -0.5 })).toEqual([
      { path: '/axis', message: 'is required when cylinder is not 0' },
    ])
    expect(refractionErrors({ sphere: -1, cylinder: -0.5, axis: null })).toHaveLength(1)
    expect(refractionErrors({ sphere: -1, axis: 90 })).toEqual([
      { path: '/axis', message: expect.stringContaining('cylinder is 0') },
    ])
    expect(refractionErrors({ sphere: -1, cylinder: 0, axis: 90 })).toHaveLength(1)
    expect(refractionErrors({ sphere: -1, cylinder: -0.5, axis: 90 })).toEqual([])
    expect(refractionErrors({ sphere: -1 })).toEqual([])
  })

  it('takes quarter dioptres only, for sphere, cylinder, add and prism', () => {
    expect(
      refractionErrors(
        { sphere: -1.1, cylinder: -0.3, axis: 10, add: 2.2, prism: { amount: 0.6, base: 'in' } },
        '/lenses/0',
      )
        .map((e) => e.path)
        .sort(),
    ).toEqual(['/lenses/0/add', '/lenses/0/cylinder', '/lenses/0/prism/amount', '/lenses/0/sphere'])
    expect(refractionErrors({ sphere: -10.75, cylinder: -2.25, axis: 5, add: 3.5 })).toEqual([])
  })

  it('keeps the transposed sphere in range', () => {
    expect(refractionErrors({ sphere: 28, cylinder: 4, axis: 10 })).toEqual([
      { path: '/sphere', message: expect.stringContaining('minus-cylinder') },
    ])
  })
})

describe('IOP and diagnoses', () => {
  it('reads IOP to one decimal', () => {
    expect(iopErrors({ mmhg: 17.5 })).toEqual([])
    expect(iopErrors({ mmhg: 21 })).toEqual([])
    expect(iopErrors({ mmhg: 17.25 })).toEqual([{ path: '/mmhg', message: 'must have at most one decimal' }])
  })

  it('checks a code by its system: WHO ICD-10 has no code past one digit after the dot', () => {
    for (const ok of ['H25', 'H40.1', 'E11.9'])
      expect(diagnosisErrors({ code: ok, system: 'icd10' })).toEqual([])
    for (const bad of ['H40.11', 'H40.1X10', 'h40.1', 'H4', 'H40.', 'H40.A', '23986001'])
      expect(diagnosisErrors({ code: bad, system: 'icd10' })).toEqual([
        { path: '/code', message: expect.stringContaining('WHO ICD-10') },
      ])
    // The clinical modifications: a category and up to four more characters (7th-character X placeholders).
    for (const system of ['icd10cm', 'cie10es']) {
      for (const ok of ['H40.11', 'H40.1X10', 'H25', 'H40.1'])
        expect(diagnosisErrors({ code: ok, system })).toEqual([])
      for (const bad of ['h40.11', 'H4', 'H40.', 'H40.12345', '23986001'])
        expect(diagnosisErrors({ code: bad, system })).toEqual([
          { path: '/code', message: expect.any(String) },
        ])
    }
    expect(diagnosisErrors({ code: '23986001', system: 'snomed' })).toEqual([])
    for (const bad of ['H40.11', '123', '2398600a'])
      expect(diagnosisErrors({ code: bad, system: 'snomed' })).toEqual([
        { path: '/code', message: expect.stringContaining('SNOMED') },
      ])
  })
})

describe('what a finding stores', () => {
  it('acuity: the value as entered, its logMAR, and the distance by kind', () => {
    expect(
      findingValues('visual_acuity', { eye: 'both', kind: 'near', value: '0.8', notation: 'decimal' }),
    ).toEqual({
      eye: 'both',
      data: { kind: 'near', value: '0.8', notation: 'decimal', distance_m: 0.4, chart: null, logmar: 0.1 },
      measuredAt: null,
    })
    expect(
      findingValues('visual_acuity', {
        eye: 'left',
        kind: 'uncorrected',
        value: 'NLP',
        notation: 'qualitative',
      }).data,
    ).toMatchObject({ logmar: null, distance_m: 6 })
  })

  it('IOP: the instant in UTC, the trend sorts by it', () => {
    const v = findingValues('iop', {
      eye: 'right',
      mmhg: 22,
      method: 'icare',
      measured_at: '2026-11-20T10:15:00+01:00',
    })
    expect(v.measuredAt).toBe('2026-11-20T09:15:00.000Z')
    expect(v.data).toEqual({
      mmhg: 22,
      method: 'icare',
      measured_at: '2026-11-20T09:15:00.000Z',
      cct_um: null,
    })
  })

  it('diagnoses: defaults for eye and status', () => {
    expect(findingValues('diagnoses', { code: 'H25', system: 'icd10' })).toEqual({
      eye: 'not_applicable',
      data: { code: 'H25', system: 'icd10', display: null, status: 'active', onset: null },
      measuredAt: null,
    })
  })
})
