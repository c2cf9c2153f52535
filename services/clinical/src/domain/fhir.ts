import type {
  CodeableConcept,
  Condition,
  Encounter,
  Observation,
  Practitioner,
  ObservationComponent,
  Quantity,
  Reference,
  VisionPrescription,
} from '@medplum/fhirtypes'
import type { Exam, ExamRow, Prescription } from '../schemas/exam'
import type { Diagnosis, Finding, Iop, Refraction, VisualAcuity } from '../schemas/findings'
import type { FindingKind } from './finding-rules'
import {
  ACUITY_CODES,
  DIAGNOSIS_SYSTEM_URIS,
  EYE_SITES,
  IOP_CODE,
  IOP_METHOD_SYSTEM,
  PRISM_BASE_SYSTEM,
  REFRACTION_CODE,
  REFRACTION_COMPONENTS,
  REFRACTION_KIND_SYSTEM,
  UCUM,
  VALID_UNTIL_EXTENSION,
} from './fhir-codes'

/**
 * The exam's FHIR R4 resources (DESIGN 14.4), each built once here for the exam's Bundle
 * (fhir-bundle.ts) and for the FHIR API (fhir-resources.ts, DESIGN 19): the Encounter, an
 * Observation per measurement, a Condition per diagnosis, a VisionPrescription per prescription.
 * The patient and the practitioner are referred to by the ids section 19 serves them under; the
 * Encounter as the caller says (EncounterRef).
 */

/** What a finding needs beyond the API's fields: the exam version that added it. */
export interface FindingVersions {
  addedIn: Record<string, number>
}
type Live = { id: string; state: string }

/** What a finding's or a prescription's resource reads of its exam. */
export type ExamOfResource = Pick<
  ExamRow,
  'id' | 'patient_id' | 'practitioner' | 'performed_at' | 'status' | 'version' | 'amendments'
>

/** The exam's Encounter: `urn:uuid:<id>` in a collection Bundle, `Encounter/<id>` as the API serves it. */
export type EncounterRef = (examId: string) => Reference<Encounter>
export const bundleEncounter: EncounterRef = (id) => ({ reference: `urn:uuid:${id}` })
export const servedEncounter: EncounterRef = (id) => ({ reference: `Encounter/${id}` })

/**
 * A finding's status (DESIGN 14.4): `preliminary` in a draft, `final` once signed; after an
 * amendment only what the amendment added is `amended`; a superseded finding, where a bundle shows
 * one, is `entered-in-error`. Signing and each amendment move the exam one version on, nothing else
 * changes a signed exam: so the version it was signed in is `version - amendments`.
 */
export function findingStatus(
  exam: Pick<Exam, 'status' | 'version' | 'amendments'>,
  finding: { state: string; addedIn: number },
): 'preliminary' | 'final' | 'amended' | 'entered-in-error' {
  if (finding.state === 'superseded') return 'entered-in-error'
  if (exam.status !== 'signed') return 'preliminary'
  return finding.addedIn > exam.version - exam.amendments ? 'amended' : 'final'
}

/** The exam's practitioner: section 11's practitioner ids are FHIR ids; any other name is a display. */
const PRACTITIONER_ID = /^[a-z0-9][a-z0-9-]{0,63}$/
export const practitionerReference = (practitioner: string): Reference<Practitioner> =>
  PRACTITIONER_ID.test(practitioner)
    ? { reference: `Practitioner/${practitioner}`, type: 'Practitioner', display: practitioner }
    : { type: 'Practitioner', display: practitioner }

const bodySite = (eye: string): { bodySite?: CodeableConcept } => {
  const site = EYE_SITES[eye]
  return site ? { bodySite: { coding: [site] } } : {}
}
const diopters = (value: number): Quantity => ({ value, unit: 'dioptre', system: UCUM, code: '[diop]' })
const coded = (system: string, code: string): CodeableConcept => ({ coding: [{ system, code }], text: code })

function observation(
  exam: ExamOfResource,
  f: Live,
  v: FindingVersions,
  ref: EncounterRef,
  fields: Omit<Observation, 'resourceType' | 'status'>,
): Observation {
  return {
    resourceType: 'Observation',
    id: f.id,
    status: findingStatus(exam, { state: f.state, addedIn: v.addedIn[f.id] ?? 0 }),
    category: [
      {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/observation-category',
            code: 'exam',
            display: 'Exam',
          },
        ],
      },
    ],
    subject: { reference: `Patient/${exam.patient_id}` },
    encounter: ref(exam.id),
    effectiveDateTime: exam.performed_at,
    performer: [practitionerReference(exam.practitioner)],
    ...fields,
  }
}

function acuity(exam: ExamOfResource, a: VisualAcuity, v: FindingVersions, ref: EncounterRef): Observation {
  return observation(exam, a, v, ref, {
    code: { coding: [ACUITY_CODES[a.kind]!], text: `visual acuity (${a.kind})` },
    ...bodySite(a.eye),
    // LP and NLP have no logMAR: the grade itself is the value.
    ...(a.logmar === null
      ? { valueCodeableConcept: { text: a.value } }
      : { valueQuantity: { value: a.logmar, unit: 'logMAR', system: UCUM, code: '{logMAR}' } }),
    component: [{ code: { text: `as entered (${a.notation})` }, valueString: a.value }],
  })
}

function iop(exam: ExamOfResource, p: Iop, v: FindingVersions, ref: EncounterRef): Observation {
  return observation(exam, p, v, ref, {
    code: { coding: [IOP_CODE] },
    ...bodySite(p.eye),
    effectiveDateTime: p.measured_at,
    valueQuantity: { value: p.mmhg, unit: 'mmHg', system: UCUM, code: 'mm[Hg]' },
    method: coded(IOP_METHOD_SYSTEM, p.method),
    ...(p.cct_um !== null
      ? {
          component: [
            {
              code: { text: 'central corneal thickness' },
              valueQuantity: { value: p.cct_um, unit: 'µm', system: UCUM, code: 'um' },
            },
          ],
        }
      : {}),
  })
}

function refraction(exam: ExamOfResource, r: Refraction, v: FindingVersions, ref: EncounterRef): Observation {
  const c = REFRACTION_COMPONENTS
  const components: ObservationComponent[] = [
    { code: { coding: [c.sphere] }, valueQuantity: diopters(r.sphere) },
  ]
  if (r.cylinder !== 0 && r.axis !== null) {
    components.push({ code: { coding: [c.cylinder] }, valueQuantity: diopters(r.cylinder) })
    components.push({
      code: { coding: [c.axis] },
      valueQuantity: { value: r.axis, unit: 'degree', system: UCUM, code: 'deg' },
    })
  }
  if (r.add !== null) components.push({ code: { coding: [c.add] }, valueQuantity: diopters(r.add) })
  if (r.prism) {
    components.push({
      code: { text: 'prism amount' },
      valueQuantity: { value: r.prism.amount, unit: 'prism dioptre', system: UCUM, code: "[p'diop]" },
    })
    components.push({
      code: { coding: [c.prismBase] },
      valueCodeableConcept: {
        coding: [{ system: PRISM_BASE_SYSTEM, code: r.prism.base }],
        text: r.prism.base,
      },
    })
  }
  return observation(exam, r, v, ref, {
    code: { coding: [REFRACTION_CODE] },
    ...bodySite(r.eye),
    method: coded(REFRACTION_KIND_SYSTEM, r.kind),
    component: components,
  })
}

type StoredDiagnosis = Diagnosis & { system_as_entered?: string }

function condition(exam: ExamOfResource, d: StoredDiagnosis, ref: EncounterRef): Condition {
  const removed = d.state === 'superseded'
  return {
    resourceType: 'Condition',
    id: d.id,
    // R4 con-5: no clinical status for a condition entered in error.
    ...(removed
      ? {}
      : {
          clinicalStatus: {
            coding: [
              {
                system: 'http://terminology.hl7.org/CodeSystem/condition-clinical',
                code: d.status === 'resolved' ? 'resolved' : 'active',
              },
            ],
          },
        }),
    verificationStatus: {
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status',
          code: removed ? 'entered-in-error' : d.status === 'suspected' ? 'provisional' : 'confirmed',
        },
      ],
    },
    code: {
      coding: [
        {
          system: DIAGNOSIS_SYSTEM_URIS[d.system],
          code: d.code,
          ...(d.display ? { display: d.display } : {}),
        },
      ],
    },
    // A Condition may sit on several sites: a list, where an Observation has one.
    ...(EYE_SITES[d.eye] ? { bodySite: [{ coding: [EYE_SITES[d.eye]!] }] } : {}),
    subject: { reference: `Patient/${exam.patient_id}` },
    encounter: ref(exam.id),
    ...(d.onset ? { onsetDateTime: d.onset } : {}),
    recordedDate: d.recorded_at,
    ...(d.system_as_entered
      ? {
          note: [
            {
              text: `Entered under the system "${d.system_as_entered}" (ICD-10, edition not stated); read as ${d.system} by migration 0003 because WHO ICD-10 has no such code.`,
            },
          ],
        }
      : {}),
  }
}

export function visionPrescription(
  exam: Pick<ExamRow, 'id' | 'practitioner'>,
  p: Prescription,
  ref: EncounterRef,
): VisionPrescription {
  return {
    resourceType: 'VisionPrescription',
    id: p.id,
    extension: [{ url: VALID_UNTIL_EXTENSION, valueDate: p.valid_until }],
    status: 'active',
    created: p.issued_at,
    patient: { reference: `Patient/${p.patient_id}` },
    encounter: ref(exam.id),
    dateWritten: p.issued_at,
    prescriber: practitionerReference(exam.practitioner),
    lensSpecification: p.lenses.map((l) => ({
      product: {
        coding: [
          {
            system: 'http://terminology.hl7.org/CodeSystem/ex-visionprescriptionproduct',
            code: p.type === 'spectacles' ? 'lens' : 'contact',
          },
        ],
      },
      eye: l.eye,
      sphere: l.sphere,
      ...(l.cylinder !== 0 && l.axis !== null ? { cylinder: l.cylinder, axis: l.axis } : {}),
      ...(l.add !== null ? { add: l.add } : {}),
      ...(l.prism ? { prism: [{ amount: l.prism.amount, base: l.prism.base }] } : {}),
      ...(l.base_curve_mm !== null ? { backCurve: l.base_curve_mm } : {}),
      ...(l.diameter_mm !== null ? { diameter: l.diameter_mm } : {}),
      ...(l.brand !== null ? { brand: l.brand } : {}),
    })),
  }
}

/** A finding of any kind as its resource: a Condition for a diagnosis, else an Observation. */
export function findingResource(
  exam: ExamOfResource,
  kind: FindingKind,
  f: Finding,
  v: FindingVersions,
  ref: EncounterRef,
): Observation | Condition {
  if (kind === 'visual_acuity') return acuity(exam, f as VisualAcuity, v, ref)
  if (kind === 'iop') return iop(exam, f as Iop, v, ref)
  if (kind === 'refraction') return refraction(exam, f as Refraction, v, ref)
  return condition(exam, f as StoredDiagnosis, ref)
}

/** The exam as its Encounter. */
export function encounterOf(exam: ExamRow): Encounter {
  return {
    resourceType: 'Encounter',
    id: exam.id,
    status: exam.status === 'signed' ? 'finished' : 'in-progress',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB', display: 'ambulatory' },
    type: [{ text: exam.kind }],
    subject: { reference: `Patient/${exam.patient_id}` },
    participant: [{ individual: practitionerReference(exam.practitioner) }],
    period: { start: exam.performed_at },
    ...(exam.chief_complaint ? { reasonCode: [{ text: exam.chief_complaint }] } : {}),
  }
}
