import {
  fhirPageOf,
  centerVisible,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
} from '@clinic/platform/core'
import type { ContactPoint, Patient as FhirPatient } from '@medplum/fhirtypes'
import type { Patient } from '../schemas/patient'
import type { PatientStore } from './patient-store'

/** The system of our national ids (`identifier=<system>|<value>`): the company's own register. */
export const NATIONAL_ID_SYSTEM = 'https://clinic.example/fhir/sid/national-id'
/** The language of a person's messages: BCP 47, as FHIR's `communication.language` binds it. */
const BCP47 = 'urn:ietf:bcp:47'

const telecom = (p: { phone: string | null; email: string | null }, use?: 'mobile'): ContactPoint[] => [
  ...(p.phone ? [{ system: 'phone' as const, value: p.phone, ...(use ? { use } : {}) }] : []),
  ...(p.email ? [{ system: 'email' as const, value: p.email }] : []),
]

/**
 * A patient as FHIR R4 `Patient` (docs/fhir.md): the national id as identifier, the name, phone
 * and email, sex as `gender`, the address, the language, and the legal guardian as `contact`
 * (whom messages go to when the patient requires one); the company as managingOrganization.
 */
export function toFhirPatient(companyId: number, p: Patient): FhirPatient {
  const a = p.address
  const lines = a ? [a.line1, a.line2].filter((l): l is string => !!l) : []
  return {
    resourceType: 'Patient',
    id: p.id,
    meta: { versionId: String(p.version), lastUpdated: p.updated_at },
    ...(p.national_id ? { identifier: [{ system: NATIONAL_ID_SYSTEM, value: p.national_id }] } : {}),
    active: true,
    name: [{ use: 'official', family: p.last_name, given: [p.first_name] }],
    ...(telecom(p, 'mobile').length ? { telecom: telecom(p, 'mobile') } : {}),
    ...(p.sex ? { gender: p.sex } : {}),
    birthDate: p.birth_date,
    ...(a && (lines.length || a.city || a.postal_code || a.region || a.country)
      ? {
          address: [
            {
              ...(lines.length ? { line: lines } : {}),
              ...(a.city ? { city: a.city } : {}),
              ...(a.postal_code ? { postalCode: a.postal_code } : {}),
              ...(a.region ? { state: a.region } : {}),
              ...(a.country ? { country: a.country } : {}),
            },
          ],
        }
      : {}),
    communication: [{ language: { coding: [{ system: BCP47, code: p.language }] }, preferred: true }],
    ...(p.guardian
      ? {
          contact: [
            {
              relationship: [{ text: p.guardian.relationship ?? 'legal guardian' }],
              name: { text: p.guardian.name },
              ...(telecom(p.guardian).length ? { telecom: telecom(p.guardian) } : {}),
            },
          ],
        }
      : {}),
    managingOrganization: { reference: `Organization/${companyId}` },
  }
}

/** `GET /fhir/R4/Patient/<id>`: a patient of the company within the token's centers, else null. */
export async function readFhirPatient(
  ctx: Ctx,
  store: PatientStore,
  id: string,
): Promise<FhirPatient | null> {
  // Our ids are UUIDs: any other FHIR id names no patient.
  const p = isUuid(id) ? await store.findById(ctx.auth.companyId, id) : null
  return p && centerVisible(visibleCenters(ctx.auth, undefined), p.codalmacen)
    ? toFhirPatient(ctx.auth.companyId, p)
    : null
}

/** `GET /fhir/R4/Patient?...`: the company's patients within the token's centers. */
export async function searchFhirPatients(
  ctx: Ctx,
  store: PatientStore,
  search: FhirSearch,
): Promise<FhirPage<FhirPatient>> {
  const page = await store.fhirSearch(ctx.auth.companyId, visibleCenters(ctx.auth, undefined), search)
  return fhirPageOf(page, (p) => toFhirPatient(ctx.auth.companyId, p))
}
