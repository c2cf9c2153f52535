import {
  FINDING_RULES,
  KIND_PATHS,
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

describe('what the rules leave to the schema', () => {
  it('checks nothing of a body that is not an object, nor a field that is not a finite number', () => {
    for (const body of [null, undefined, 'x', 7, [{ sphere: 0.1 }]]) {
      expect(refractionErrors(body)).toEqual([])
      expect(iopErrors(body)).toEqual([])
      expect(diagnosisErrors(body)).toEqual([])
    }
    expect(refractionErrors({ sphere: 'x', cylinder: Infinity, add: NaN })).toEqual([])
    expect(iopErrors({ mmhg: '17.25' })).toEqual([])
    expect(iopErrors({})).toEqual([])
    expect(diagnosisErrors({ code: 1, system: 'icd10' })).toEqual([])
    expect(diagnosisErrors({ code: 'h40', system: 1 })).toEqual([])
    expect(diagnosisErrors({ code: 'h40', system: 'icd9' })).toEqual([])
  })
})

describe('refraction rules: each message, each edge', () => {
  it('says quarter dioptres, and prism dioptres for a prism', () => {
    expect(refractionErrors({ sphere: -1.1 })).toEqual([
      { path: '/sphere', message: 'must be in steps of 0.25 dioptres' },
    ])
    expect(refractionErrors({ sphere: -1, prism: { amount: 0.6, base: 'in' } })).toEqual([
      { path: '/prism/amount', message: 'must be in steps of 0.25 prism dioptres' },
    ])
    expect(refractionErrors({ sphere: -1, prism: { base: 'in' } })).toEqual([])
    expect(refractionErrors({ sphere: -1, prism: null })).toEqual([])
  })

  it('bounds the sphere of a transposed plus cylinder at 30 either way, and no other', () => {
    expect(refractionErrors({ sphere: 26, cylinder: 4, axis: 10 })).toEqual([])
    expect(refractionErrors({ sphere: 26.25, cylinder: 4, axis: 10 })).toHaveLength(1)
    expect(refractionErrors({ sphere: -28, cylinder: -4, axis: 10 })).toEqual([])
    // Without a cylinder, the sphere's range is the schema's.
    expect(refractionErrors({ sphere: 31, cylinder: 0 })).toEqual([])
    expect(refractionErrors({ sphere: 31 })).toEqual([])
  })
})

describe('diagnosis codes', () => {
  it('match the whole code, and say which system they expected', () => {
    expect(diagnosisErrors({ code: 'xH40.11', system: 'icd10cm' })).toEqual([
      { path: '/code', message: 'is not an ICD-10-CM code (e.g. H40.11)' },
    ])
    expect(diagnosisErrors({ code: 'H40.11x', system: 'cie10es' }, '/add/diagnoses/0')).toEqual([
      { path: '/add/diagnoses/0/code', message: 'is not a CIE-10-ES code (e.g. H40.11)' },
    ])
    expect(diagnosisErrors({ code: 'a23986001', system: 'snomed' })).toEqual([
      { path: '/code', message: 'is not a SNOMED CT concept id (6 to 18 digits)' },
    ])
    expect(diagnosisErrors({ code: 'xH40', system: 'icd10' })).toHaveLength(1)
  })
})

describe('each kind’s rule and path', () => {
  it('runs the rule of the finding’s kind, under the path segment its POST uses', () => {
    expect(FINDING_RULES.visual_acuity({ value: '6/x', notation: 'snellen_m' })).toEqual([
      expect.objectContaining({ path: '/value' }),
    ])
    expect(FINDING_RULES.iop({ mmhg: 17.25 })).toEqual([expect.objectContaining({ path: '/mmhg' })])
    expect(FINDING_RULES.refraction({ sphere: -1.1 })).toEqual([expect.objectContaining({ path: '/sphere' })])
    expect(FINDING_RULES.diagnoses({ code: 'h40', system: 'icd10' })).toEqual([
      expect.objectContaining({ path: '/code' }),
    ])
    expect(KIND_PATHS).toEqual({
      visual_acuity: 'visual-acuity',
      iop: 'iop',
      refraction: 'refraction',
      diagnoses: 'diagnoses',
    })
  })
})

describe('what a finding stores, kind by kind', () => {
  it('acuity: a distance and chart given are kept; nothing undefined is stored', () => {
    const v = findingValues('visual_acuity', {
      eye: 'right',
      kind: 'near',
      value: '6/9',
      notation: 'snellen_m',
      distance_m: 0.33,
      chart: 'ETDRS',
      note: undefined,
    })
    expect(v.data).toEqual({
      kind: 'near',
      value: '6/9',
      notation: 'snellen_m',
      distance_m: 0.33,
      chart: 'ETDRS',
      logmar: 0.18,
    })
    expect(Object.keys(v.data)).not.toContain('note')
    expect(
      findingValues('visual_acuity', { eye: 'left', kind: 'pinhole', value: '6/6', notation: 'snellen_m' })
        .data,
    ).toMatchObject({ distance_m: 6, chart: null })
  })

  it('refraction: in minus-cylinder form, with add and prism null when absent', () => {
    expect(
      findingValues('refraction', { eye: 'left', kind: 'manifest', sphere: -2.25, cylinder: 0.75, axis: 30 }),
    ).toEqual({
      eye: 'left',
      data: { kind: 'manifest', sphere: -1.5, cylinder: -0.75, axis: 120, add: null, prism: null },
      measuredAt: null,
    })
    expect(
      findingValues('refraction', {
        eye: 'right',
        kind: 'cycloplegic',
        sphere: 1.25,
        add: 2,
        prism: { amount: 1, base: 'up' },
      }).data,
    ).toEqual({
      kind: 'cycloplegic',
      sphere: 1.25,
      cylinder: 0,
      axis: null,
      add: 2,
      prism: { amount: 1, base: 'up' },
    })
  })

  it('IOP keeps a corneal thickness; diagnoses keep what was given', () => {
    expect(
      findingValues('iop', {
        eye: 'left',
        mmhg: 14,
        method: 'icare',
        measured_at: '2026-11-20T09:00:00Z',
        cct_um: 540,
      }).data.cct_um,
    ).toBe(540)
    expect(
      findingValues('diagnoses', {
        code: 'H40.11',
        system: 'icd10cm',
        eye: 'right',
        display: 'glaucoma',
        status: 'suspected',
        onset: '2026-01-01',
      }),
    ).toEqual({
      eye: 'right',
      data: {
        code: 'H40.11',
        system: 'icd10cm',
        display: 'glaucoma',
        status: 'suspected',
        onset: '2026-01-01',
      },
      measuredAt: null,
    })
  })
})
