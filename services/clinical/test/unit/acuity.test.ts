import { acuityValueErrors, logmarOf, type Notation } from '../../src/domain/acuity'

const logmar = (notation: Notation, value: string) => {
  const r = logmarOf(notation, value)
  if ('error' in r) throw new Error(r.error)
  return r.logmar
}

describe('logMAR of an acuity as entered (DESIGN 14)', () => {
  it.each([
    ['snellen_m', '6/9', 0.18],
    ['snellen_m', '6/6', 0],
    ['snellen_m', '6/60', 1],
    ['snellen_m', '6/4.8', -0.1],
    ['snellen_ft', '20/30', 0.18],
    ['snellen_ft', '20/20', 0],
    ['snellen_ft', '20/200', 1],
    ['decimal', '0.67', 0.17],
    ['decimal', '1.0', 0],
    ['decimal', '0.1', 1],
    ['logmar', '0.18', 0.18],
    ['logmar', '-0.1', -0.1],
    ['etdrs_letters', '76', 0.18],
    ['etdrs_letters', '85', 0],
    ['etdrs_letters', '35', 1],
    ['qualitative', 'CF', 1.98],
    ['qualitative', 'HM', 2.28],
    ['qualitative', 'hm', 2.28],
  ] as Array<[Notation, string, number]>)('%s %s is %d', (notation, value, expected) => {
    expect(logmar(notation, value)).toBe(expected)
  })

  it('has no logMAR for light perception or its absence', () => {
    expect(logmar('qualitative', 'LP')).toBeNull()
    expect(logmar('qualitative', 'NLP')).toBeNull()
  })

  it('is never -0', () => {
    expect(Object.is(logmar('snellen_m', '6/6'), 0)).toBe(true)
    expect(Object.is(logmar('logmar', '-0.00'), 0)).toBe(true)
  })

  it.each([
    ['snellen_m', '6/x'],
    ['snellen_m', '0/9'],
    ['snellen_m', '6/0'],
    ['snellen_m', '0.67'],
    ['snellen_ft', '20-30'],
    ['decimal', '0'],
    ['decimal', '6/9'],
    ['decimal', '5'],
    ['logmar', '3.5'],
    ['logmar', 'abc'],
    ['etdrs_letters', '101'],
    ['etdrs_letters', '76.5'],
    ['etdrs_letters', '-1'],
    ['qualitative', 'PL'],
    ['qualitative', '6/9'],
  ] as Array<[Notation, string]>)('%s %s does not read', (notation, value) => {
    expect(logmarOf(notation, value)).toEqual({ error: expect.any(String) })
  })

  it('names the value of a body that does not read in its notation, and nothing else', () => {
    expect(acuityValueErrors({ value: '20/3O', notation: 'snellen_ft' }, '/add/visual_acuity/0')).toEqual([
      { path: '/add/visual_acuity/0/value', message: expect.stringContaining('snellen_ft') },
    ])
    expect(acuityValueErrors({ value: '20/30', notation: 'snellen_ft' })).toEqual([])
    // What the schema refuses on its own (no value, an unknown notation) is left to it.
    expect(acuityValueErrors({ notation: 'snellen_ft' })).toEqual([])
    expect(acuityValueErrors({ value: '1', notation: 'jaeger' })).toEqual([])
    expect(acuityValueErrors(null)).toEqual([])
  })
})

describe('the edges of each notation', () => {
  it('reads the value as entered around its blanks', () => {
    expect(logmar('snellen_m', ' 6/9 ')).toBe(0.18)
    expect(logmar('qualitative', ' cf')).toBe(1.98)
  })

  it('takes the whole scale and nothing past it', () => {
    expect(logmar('decimal', '4')).toBe(-0.6)
    expect(logmar('decimal', '1')).toBe(0)
    expect(logmar('logmar', '-0.5')).toBe(-0.5)
    expect(logmar('logmar', '3')).toBe(3)
    expect(logmar('etdrs_letters', '0')).toBe(1.7)
    expect(logmar('etdrs_letters', '100')).toBe(-0.3)
    expect(logmar('snellen_m', '6.00/7.50')).toBe(0.1)
    expect(logmar('snellen_ft', '20/12.5')).toBe(-0.2)
    for (const [notation, value] of [
      ['decimal', '4.01'],
      ['logmar', '-0.51'],
      ['logmar', '3.01'],
      ['decimal', 'x0.5'],
      ['decimal', '0.5x'],
      ['snellen_m', 'x6/9'],
      ['snellen_m', '6/9x'],
      ['snellen_m', '6/7.505'],
    ] as Array<[Notation, string]>)
      expect([notation, value, logmarOf(notation, value)]).toEqual([
        notation,
        value,
        { error: expect.any(String) },
      ])
  })

  it('says what each notation expects', () => {
    const error = (notation: Notation, value: string) =>
      (logmarOf(notation, value) as { error: string }).error
    expect(error('snellen_m', '6-9')).toBe('is not a Snellen fraction (6/9: test distance / letter size)')
    expect(error('snellen_ft', '20-30')).toBe(
      'is not a Snellen fraction (20/30: test distance / letter size)',
    )
    expect(error('decimal', '5')).toBe('is not a decimal acuity (greater than 0, at most 4, e.g. 0.67)')
    expect(error('logmar', '4')).toBe('is not a logMAR value (-0.5 to 3.0, e.g. 0.18)')
    expect(error('etdrs_letters', '101')).toBe('is not a count of ETDRS letters (0 to 100)')
    expect(error('qualitative', 'PL')).toBe('is not one of CF, HM, LP, NLP')
  })

  it('names /value at the body’s own root by default', () => {
    expect(acuityValueErrors({ value: '6/x', notation: 'snellen_m' })).toEqual([
      {
        path: '/value',
        message: expect.stringMatching(/^is not a Snellen fraction .*\(notation snellen_m\)$/),
      },
    ])
    expect(acuityValueErrors('6/x')).toEqual([])
    expect(acuityValueErrors({ value: 6, notation: 'decimal' })).toEqual([])
  })
})
