import {
  codesIn,
  fhirPageOf,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
} from '@clinic/platform/core'
import type { Consent as FhirConsent } from '@medplum/fhirtypes'
import type { Consent, ConsentStatus } from '../schemas/consent'
import type { ConsentFhirFilter, ConsentStore } from './consent-store'
import { getConsent } from './get-consent'

/** FHIR R4 ConsentState (a required binding). */
export const CONSENT_STATE_SYSTEM = 'http://hl7.org/fhir/consent-state-codes'
type ConsentState = FhirConsent['status']

/** Our statuses (DESIGN.md section 16) as ConsentState; `draft` and `entered-in-error` are none of ours. */
export const CONSENT_STATES: Record<ConsentStatus, ConsentState> = {
  pending: 'proposed',
  granted: 'active',
  refused: 'rejected',
  withdrawn: 'inactive',
  expired: 'inactive',
}

/** HL7 Consent Scope Codes: every consent of ours is consent to undergo a procedure. */
const SCOPE = {
  coding: [
    { system: 'http://terminology.hl7.org/CodeSystem/consentscope', code: 'treatment', display: 'Treatment' },
  ],
}
/** From the R4 ConsentCategoryCodes value set: LOINC 59284-0 (LOINC's display: "Consent Document"). */
const CATEGORY = [{ coding: [{ system: 'http://loinc.org', code: '59284-0', display: 'Consent Document' }] }]
/** Our consent templates by key, as the rule consented to (`policyRule`; R4 needs a policy or one). */
export const CONSENT_TEMPLATE_SYSTEM = 'https://clinic.example/fhir/CodeSystem/consent-template'

/**
 * The signer as `performer`: the patient (`Patient/<id>`, with the name as typed once answered), or
 * the guardian as a RelatedPerson named as typed (no resource of ours: display only; none until
 * answered, as the consent holds no guardian's name before).
 */
function performer(c: Consent): NonNullable<FhirConsent['performer']> {
  const name = c.evidence?.signer_name
  if (c.signer_role === 'patient')
    return [{ reference: `Patient/${c.patient_id}`, ...(name ? { display: name } : {}) }]
  return name ? [{ type: 'RelatedPerson', display: name }] : []
}

/**
 * A consent as FHIR R4 `Consent` (README "FHIR"): the state, scope `treatment`, category LOINC
 * 59284-0, the patient, when it was answered (else asked), the signer, the company, the template as
 * `policyRule`, the signed PDF (or scanned form) as `sourceReference`, and while it held (granted
 * to withdrawn) as `provision.period`.
 */
export function toFhirConsent(companyId: number, c: Consent): FhirConsent {
  const signed = c.evidence?.signed_at
  const performers = performer(c)
  return {
    resourceType: 'Consent',
    id: c.id,
    meta: { versionId: String(c.version), lastUpdated: c.updated_at },
    status: CONSENT_STATES[c.status],
    scope: SCOPE,
    category: CATEGORY,
    patient: { reference: `Patient/${c.patient_id}` },
    dateTime: signed ?? c.created_at,
    ...(performers.length ? { performer: performers } : {}),
    organization: [{ reference: `Organization/${companyId}` }],
    ...(c.document_id ? { sourceReference: { reference: `DocumentReference/${c.document_id}` } } : {}),
    policyRule: {
      coding: [{ system: CONSENT_TEMPLATE_SYSTEM, code: c.template_key }],
      text: `${c.template_key} version ${c.template_version} (${c.language}), text SHA-256 ${c.text_sha256}`,
    },
    ...((c.status === 'granted' || c.status === 'withdrawn') && signed
      ? {
          provision: {
            type: 'permit' as const,
            period: { start: signed, ...(c.withdrawn_at ? { end: c.withdrawn_at } : {}) },
          },
        }
      : {}),
  }
}

/** `GET /fhir/R4/Consent/<id>`: as GET /consents/<id> sees it. */
export async function readFhirConsent(
  ctx: Ctx,
  store: ConsentStore,
  id: string,
): Promise<FhirConsent | null> {
  if (!isUuid(id)) return null
  return toFhirConsent(ctx.auth.companyId, await getConsent(ctx, store, { id }))
}

const STATUSES_OF = new Map<string, ConsentStatus[]>()
for (const [ours, state] of Object.entries(CONSENT_STATES) as Array<[ConsentStatus, string]>)
  STATUSES_OF.set(state, [...(STATUSES_OF.get(state) ?? []), ours])

/** The patient and status parameters as the store's filter, within the token's centers. */
function consentFilter(ctx: Ctx, s: FhirSearch): ConsentFhirFilter {
  return {
    centers: visibleCenters(ctx.auth, undefined),
    patientIds: s.references('patient').map((alts) => alts.map((r) => r.id.toLowerCase()).filter(isUuid)),
    statuses: s
      .tokens('status')
      .map((alts) => codesIn(alts, CONSENT_STATE_SYSTEM).flatMap((code) => STATUSES_OF.get(code) ?? [])),
  }
}

/** `GET /fhir/R4/Consent?...`: the company's consents within the token's centers. */
export async function searchFhirConsents(
  ctx: Ctx,
  store: ConsentStore,
  search: FhirSearch,
): Promise<FhirPage<FhirConsent>> {
  const page = await store.fhirSearch(ctx.auth.companyId, consentFilter(ctx, search), search)
  return fhirPageOf(page, (c) => toFhirConsent(ctx.auth.companyId, c))
}
