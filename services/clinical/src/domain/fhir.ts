import type { Exam, Prescription } from '../schemas/exam'
import type { Diagnosis, Iop, Refraction, VisualAcuity } from '../schemas/findings'

/**
 * The exam as a FHIR R4 Bundle (DESIGN 14.4): an Encounter, an Observation per live measurement,
 * a Condition per live diagnosis, a VisionPrescription per prescription. Codes as the HL7 eye-care
 * IG and the EyeMatics profiles use them. Entries refer to each other by `urn:uuid:` (a collection
 * is not a server's resources: there are no relative URLs to resolve).
 */

const SNOMED = 'http://snomed.info/sct'
const LOINC = 'http://loinc.org'
const UCUM = 'http://unitsofmeasure.org'

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const BODY_SITES: Record<string, { code: string; display: string }> = {
  right: { code: '362503005', display: 'Entire right eye' },
  left: { code: '362502000', display: 'Entire left eye' },
  both: { code: '40638003', display: 'Both eyes' },
}
const bodySite = (eye: string) => {
  const site = BODY_SITES[eye]
  return site ? { bodySite: { coding: [{ system: SNOMED, ...site }] } } : {}
}

const ACUITY_CODES: Record<string, { code: string; display: string }> = {
  uncorrected: { code: '420050001', display: 'Uncorrected visual acuity' },
  best_corrected: { code: '419775003', display: 'Best corrected visual acuity' },
  pinhole: { code: '419475002', display: 'Pinhole visual acuity' },
}
const DISTANCE_ACUITY = { code: '251739003', display: 'Visual acuity' }

const diopters = (value: number) => ({ value, unit: 'dioptre', system: UCUM, code: '[diop]' })
const component = (code: string, display: string, valueQuantity: Record<string, unknown>) => ({
  code: { coding: [{ system: SNOMED, code, display }] },
  valueQuantity,
})

function observation(exam: Exam, id: string, fields: Record<string, unknown>): Resource {
  return {
    resourceType: 'Observation',
    id,
    status: exam.status === 'signed' ? (exam.amendments > 0 ? 'amended' : 'final') : 'preliminary',
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
    encounter: { reference: `urn:uuid:${exam.id}` },
    effectiveDateTime: exam.performed_at,
    ...fields,
  }
}

function acuity(exam: Exam, a: VisualAcuity): Resource {
  const code = ACUITY_CODES[a.kind] ?? DISTANCE_ACUITY
  return observation(exam, a.id, {
    code: { coding: [{ system: SNOMED, ...code }], text: `visual acuity (${a.kind})` },
    ...bodySite(a.eye),
    // LP and NLP have no logMAR: the grade itself is the value.
    ...(a.logmar === null
      ? { valueCodeableConcept: { text: a.value } }
      : { valueQuantity: { value: a.logmar, unit: 'logMAR' } }),
    component: [
      {
        code: { text: `as entered (${a.notation})` },
        valueString: a.value,
      },
    ],
  })
}

function iop(exam: Exam, p: Iop): Resource {
  return observation(exam, p.id, {
    code: { coding: [{ system: LOINC, code: '56844-4', display: 'Intraocular pressure of Eye' }] },
    ...bodySite(p.eye),
    effectiveDateTime: p.measured_at,
    valueQuantity: { value: p.mmhg, unit: 'mmHg', system: UCUM, code: 'mm[Hg]' },
    method: { text: p.method },
  })
}

function refraction(exam: Exam, r: Refraction): Resource {
  const components = [component('251795007', 'Sphere', diopters(r.sphere))]
  if (r.cylinder !== 0) {
    components.push(component('251797004', 'Cylinder', diopters(r.cylinder)))
    components.push(
      component('251799001', 'Axis', { value: r.axis, unit: 'degree', system: UCUM, code: 'deg' }),
    )
  }
  if (typeof r.add === 'number') components.push(component('397282003', 'Add', diopters(r.add)))
  return observation(exam, r.id, {
    code: { coding: [{ system: SNOMED, code: '251794006', display: 'Refraction' }] },
    ...bodySite(r.eye),
    method: { text: r.kind },
    component: components,
  })
}

const CODE_SYSTEMS = { icd10: 'http://hl7.org/fhir/sid/icd-10', snomed: SNOMED } as const

function condition(exam: Exam, d: Diagnosis): Resource {
  return {
    resourceType: 'Condition',
    id: d.id,
    clinicalStatus: {
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/condition-clinical',
          code: d.status === 'resolved' ? 'resolved' : 'active',
        },
      ],
    },
    verificationStatus: {
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status',
          code: d.status === 'suspected' ? 'provisional' : 'confirmed',
        },
      ],
    },
    code: {
      coding: [
        { system: CODE_SYSTEMS[d.system], code: d.code, ...(d.display ? { display: d.display } : {}) },
      ],
    },
    // A Condition may sit on several sites: a list, where an Observation has one.
    ...(BODY_SITES[d.eye] ? { bodySite: [bodySite(d.eye).bodySite] } : {}),
    subject: { reference: `Patient/${exam.patient_id}` },
    encounter: { reference: `urn:uuid:${exam.id}` },
    ...(d.onset ? { onsetDateTime: d.onset } : {}),
    recordedDate: d.recorded_at,
  }
}

function visionPrescription(exam: Exam, p: Prescription): Resource {
  return {
    resourceType: 'VisionPrescription',
    id: p.id,
    status: 'active',
    created: p.issued_at,
    patient: { reference: `Patient/${p.patient_id}` },
    encounter: { reference: `urn:uuid:${exam.id}` },
    dateWritten: p.issued_at,
    prescriber: { display: p.issued_by },
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
      ...(l.cylinder !== 0 ? { cylinder: l.cylinder, axis: l.axis } : {}),
      ...(l.add !== null ? { add: l.add } : {}),
      ...(l.prism ? { prism: [l.prism as { amount: number; base: string }] } : {}),
      ...(l.base_curve_mm !== null ? { backCurve: l.base_curve_mm } : {}),
      ...(l.diameter_mm !== null ? { diameter: l.diameter_mm } : {}),
      ...(l.brand !== null ? { brand: l.brand } : {}),
    })),
  }
}

export function examBundle(exam: Exam, now: Date): Record<string, unknown> {
  const live = <T extends { state: string }>(list: T[]) => list.filter((f) => f.state === 'live')
  const encounter: Resource = {
    resourceType: 'Encounter',
    id: exam.id,
    status: exam.status === 'signed' ? 'finished' : 'in-progress',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB', display: 'ambulatory' },
    type: [{ text: exam.kind }],
    subject: { reference: `Patient/${exam.patient_id}` },
    participant: [{ individual: { display: exam.practitioner } }],
    period: { start: exam.performed_at },
    ...(exam.chief_complaint ? { reasonCode: [{ text: exam.chief_complaint }] } : {}),
  }
  const resources: Resource[] = [
    encounter,
    ...live(exam.visual_acuity).map((a) => acuity(exam, a)),
    ...live(exam.iop).map((p) => iop(exam, p)),
    ...live(exam.refraction).map((r) => refraction(exam, r)),
    ...live(exam.diagnoses).map((d) => condition(exam, d)),
    ...exam.prescriptions.map((p) => visionPrescription(exam, p)),
  ]
  return {
    resourceType: 'Bundle',
    id: exam.id,
    type: 'collection',
    timestamp: now.toISOString(),
    entry: resources.map((resource) => ({ fullUrl: `urn:uuid:${resource.id}`, resource })),
  }
}
