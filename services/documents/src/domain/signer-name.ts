import type { PatientContact } from './directories'
import type { SignerRole } from '../schemas/consent'

/** A name's words as compared: lower case, accents off (NFD without combining marks), split on spaces. */
const wordsOf = (name: string) =>
  name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[\s,.'’-]+/u)
    .filter(Boolean)

/**
 * Whether a name typed by a signer names the person on file (DESIGN.md section 16): every word of
 * the name on file appears in the typed one, ignoring case, accents, punctuation and spacing. So
 * "Marta García López" matches "Marta Garcia" (a second surname typed), "marta garcia" too, and
 * "Pepe Desconocido" or a bare "Marta" do not. Null when there is no name on file to compare.
 */
export function namesMatch(typed: string, onFile: string | null): boolean | null {
  if (onFile === null) return null
  const expected = wordsOf(onFile)
  if (!expected.length) return null
  const given = new Set(wordsOf(typed))
  return expected.every((w) => given.has(w))
}

/** The signer's name on the patient's record: the guardian's for a guardian, else the patient's. */
export function signerOnFile(patient: PatientContact | null, role: SignerRole): string | null {
  if (!patient) return null
  if (role === 'guardian') return patient.guardian?.name?.trim() || null
  return `${patient.first_name} ${patient.last_name}`.trim() || null
}
