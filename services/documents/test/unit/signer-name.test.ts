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
