import { namesMatch, signerOnFile } from '../../src/domain/signer-name'

describe('namesMatch: every word on file in the typed name, case, accents and spacing aside', () => {
  it.each([
    ['Marta García López', 'Marta Garcia', true],
    ['marta   garcía', 'Marta García', true],
    ['García, Marta', 'Marta García', true],
    ['Pepe Desconocido', 'Marta Garcia', false],
    ['Marta', 'Marta García', false],
    ['Martina García', 'Marta García', false],
  ])('%s vs %s on file -> %s', (typed, onFile, expected) => expect(namesMatch(typed, onFile)).toBe(expected))

  it('is null with no name on file', () => {
    expect(namesMatch('Marta', null)).toBeNull()
    expect(namesMatch('Marta', ' ')).toBeNull()
  })
})

describe('signerOnFile', () => {
  const patient = {
    id: 'p',
    codalmacen: null,
    first_name: 'Niña',
    last_name: 'Ficticia',
    email: null,
    phone: null,
    preferred_channel: null,
    language: 'es',
    requires_legal_guardian: true,
    guardian: { name: 'Marta García', relationship: 'madre', email: null, phone: null },
    version: 1,
  }
  it("is the guardian's name for a guardian, the patient's for the patient, null when unknown", () => {
    expect(signerOnFile(patient as never, 'guardian')).toBe('Marta García')
    expect(signerOnFile(patient as never, 'patient')).toBe('Niña Ficticia')
    expect(signerOnFile({ ...patient, guardian: null } as never, 'guardian')).toBeNull()
    expect(signerOnFile(null, 'patient')).toBeNull()
  })
})

describe('namesMatch: what separates words, what is ignored', () => {
  it.each([
    // Hyphens, apostrophes (straight and typographic), periods, commas, tabs and line breaks part words.
    ['María-José Núñez', 'Maria Jose Nunez', true],
    ['Maria Jose Nunez', 'María-José Núñez', true],
    ["Sean O'Brien", 'Sean O’Brien', true],
    ['Sean O’Brien', "Sean O'Brien", true],
    ['J. R. Tolkien', 'J R Tolkien', true],
    ['Tolkien,J,R', 'J R Tolkien', true],
    ['marta\tgarcía\nlópez', 'Marta García López', true],
    // Accents and case aside, but not other letters.
    ['MARTA GARCÍA', 'marta garcia', true],
    ['Marta Garcıa', 'Marta Garcia', false],
    ['Marta Garcia', 'Marta Garcias', false],
    // Every word on file must be typed, once is enough.
    ['Garcia Garcia', 'Marta Garcia', false],
    ['', 'Marta García', false],
  ])('%j vs %j on file -> %s', (typed, onFile, expected) => expect(namesMatch(typed, onFile)).toBe(expected))

  it('is null when the name on file has no word (only punctuation or spaces)', () => {
    expect(namesMatch('Marta', '')).toBeNull()
    expect(namesMatch('Marta', ' - . , ')).toBeNull()
    expect(namesMatch('', ' ')).toBeNull()
  })
})

describe('signerOnFile: what is on file', () => {
  const base = {
    id: 'p',
    codalmacen: null,
    first_name: 'Niña',
    last_name: 'Ficticia',
    email: null,
    phone: null,
    preferred_channel: null,
    language: 'es',
    requires_legal_guardian: false,
    guardian: null,
    version: 1,
  }
  it("the patient's name, trimmed, even when a guardian is on file; null when the patient has none", () => {
    const guardian = { name: 'Marta García', relationship: null, email: null, phone: null }
    expect(signerOnFile({ ...base, guardian }, 'patient')).toBe('Niña Ficticia')
    expect(signerOnFile({ ...base, first_name: '', last_name: 'Ficticia' }, 'patient')).toBe('Ficticia')
    expect(signerOnFile({ ...base, first_name: 'Niña', last_name: '' }, 'patient')).toBe('Niña')
    expect(signerOnFile({ ...base, first_name: '', last_name: '' }, 'patient')).toBeNull()
  })
  it("the guardian's name, trimmed; null when blank or missing, never the patient's", () => {
    const guardian = (name: string) => ({ name, relationship: 'madre', email: null, phone: null })
    expect(signerOnFile({ ...base, guardian: guardian('  Marta García ') }, 'guardian')).toBe('Marta García')
    expect(signerOnFile({ ...base, guardian: guardian('   ') }, 'guardian')).toBeNull()
    expect(signerOnFile({ ...base, guardian: null }, 'guardian')).toBeNull()
    expect(signerOnFile(null, 'guardian')).toBeNull()
  })
})
