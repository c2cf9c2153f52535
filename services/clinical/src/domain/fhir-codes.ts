import type { Coding } from '@medplum/fhirtypes'

/**
 * The codes of the FHIR output (DESIGN 14.4), each copied from the value set named beside it (HL7
 * eye-care value sets, SNOMED CT International 2023-09-01; LOINC; UCUM), never recalled. The tests
 * check the output against their own copy of those value sets (test/fixtures/eyecare-codes.json),
 * not against this file. A wrong eye is a patient-safety defect: an earlier version of this map had
 * right and left swapped.
 */

export const SNOMED = 'http://snomed.info/sct'
export const LOINC = 'http://loinc.org'
export const UCUM = 'http://unitsofmeasure.org'

const snomed = (code: string, display: string): Coding => ({ system: SNOMED, code, display })

/** `bodySite`: value set EyecareTargetSiteCodes (http://hl7.org/cda/us/eyecare/ValueSet/EyecareTargetSiteCodes). */
export const EYE_SITES: Record<string, Coding> = {
  right: snomed('362502000', 'Entire right eye'),
  left: snomed('362503005', 'Entire left eye'),
  both: snomed('362508001', 'Both eyes, entire'),
}

/**
 * Acuity `code` by kind. Distance and near (and pinhole): VisualAcuityObservationCodes;
 * uncorrected: VisualAcuityOrganizerCodes; best corrected: SNOMED CT observable entity 419775003, as
 * DESIGN 14.4 names it (not in the CDA eye-care value sets). Habitual (with the patient's own
 * correction) has no code of its own: it is distance acuity, the kind said in `code.text`.
 */
export const ACUITY_CODES: Record<string, Coding> = {
  habitual: snomed('251739003', 'Distance visual acuity'),
  near: snomed('251743004', 'Near visual acuity'),
  pinhole: snomed('419475002', 'Pinhole visual acuity (observable entity)'),
  uncorrected: snomed('420050001', 'Uncorrected visual acuity (observable entity)'),
  best_corrected: snomed('419775003', 'Best corrected visual acuity'),
}

/** IOP: LOINC 56844-4, in UCUM mm[Hg]. */
export const IOP_CODE: Coding = { system: LOINC, code: '56844-4', display: 'Intraocular pressure of Eye' }

/**
 * Refraction: `code` 251794006 (the HL7 FHIR eye-care IG's example observation-refraction-re-0);
 * components from RefractionObservationCodes. The prism's amount has no code in that value set: it
 * is named in text (DESIGN 14.4 asks for it whenever the finding has a prism).
 */
export const REFRACTION_CODE = snomed('251794006', 'Refraction')
export const REFRACTION_COMPONENTS = {
  sphere: snomed('251795007', 'Power of sphere'),
  cylinder: snomed('251797004', 'Power of cylinder'),
  axis: snomed('251799001', 'Axis of cylinder'),
  add: snomed('397282003', 'Reading addition power (observable entity)'),
  prismBase: snomed('246223004', 'Prism base direction'),
} as const
/** R4's own code system for a prism's base (in, out, up, down), as VisionPrescription uses it. */
export const PRISM_BASE_SYSTEM = 'http://hl7.org/fhir/vision-base-codes'

/**
 * Diagnosis systems: `system` says exactly which code system the code is from (DESIGN 14.4).
 * CIE-10-ES (Spain's edition of ICD-10-CM, published by the Ministerio de Sanidad) has no FHIR URI
 * registered with HL7 (HL7 Terminology lists ICD-10 and ICD-10-CM, not CIE-10-ES) and no OID we
 * could confirm from the Ministry: per FHIR R4 ("Using Codes", when no URI is defined) the sender
 * names it with a URI it controls, ours, documented in docs/DESIGN.md ("FHIR: code systems").
 */
export const DIAGNOSIS_SYSTEM_URIS = {
  icd10: 'http://hl7.org/fhir/sid/icd-10',
  icd10cm: 'http://hl7.org/fhir/sid/icd-10-cm',
  cie10es: 'https://clinic.example/fhir/CodeSystem/cie-10-es',
  snomed: SNOMED,
} as const

/**
 * Our own code systems, for what has no published code we could copy with its display: an IOP
 * measurement's tonometer (the EyeMatics "IOP Methods" value set takes SNOMED CT descendants of
 * Tonometry, but its published expansion gives no displays to tie our six methods to them) and a
 * refraction's kind. The code is our API's value; `text` repeats it.
 */
export const IOP_METHOD_SYSTEM = 'https://clinic.example/fhir/CodeSystem/iop-method'
export const REFRACTION_KIND_SYSTEM = 'https://clinic.example/fhir/CodeSystem/refraction-kind'
/** A prescription's last valid day (R4 VisionPrescription has no element for it). */
export const VALID_UNTIL_EXTENSION =
  'https://clinic.example/fhir/StructureDefinition/vision-prescription-valid-until'
