import {
  type FhirRows,
  fhirPageOf,
  centerVisible,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
} from '@clinic/platform/core'
import type { CodeableConcept, Communication } from '@medplum/fhirtypes'
import type { Channel, VersionedMessage } from '../schemas/message'

/** A message as FHIR reads it: what the native API shows, and when the row last changed. */
export type CommunicationRow = VersionedMessage & { updated_at: string }

/** What the FHIR side reads (MessagesRepository): one message, and a search page (fhirSearchPage). */
export interface CommunicationStore {
  /** The company's message `id` (a UUID), whatever its center, or null. */
  findCommunication(companyId: number, id: string): Promise<CommunicationRow | null>
  /** `patient` and `sent` applied, within `centers` (null: every center); `_id`, `_lastUpdated`, order, paging. */
  fhirSearch(companyId: number, centers: string[] | null, s: FhirSearch): Promise<FhirRows<CommunicationRow>>
}

/**
 * HL7 v3 ParticipationMode: how the message travelled. EMAILWRIT ("email", under ONLINEWRIT) is in
 * the code system as FHIR R4 ships it; SMSWRIT ("SMS message") was added in HL7 Terminology (THO)
 * 3.1.0, the code system's current versions (R4's 2018 copy has no SMS code).
 */
export const PARTICIPATION_MODE = 'http://terminology.hl7.org/CodeSystem/v3-ParticipationMode'
const MEDIUM: Record<Channel, { code: string; display: string }> = {
  email: { code: 'EMAILWRIT', display: 'email' },
  sms: { code: 'SMSWRIT', display: 'SMS message' },
}
/** FHIR's communication-category: the appointment reminder template is a `reminder`. */
const CATEGORY = 'http://terminology.hl7.org/CodeSystem/communication-category'

type EventStatus = Communication['status']

/**
 * Our message states as FHIR EventStatus. queued (and `sending`, shown as queued) is under way;
 * sent and delivered completed; undelivered stopped (it left, the carrier did not deliver it);
 * suppressed and failed not-done (nothing left), except a send whose outcome is unknown (the
 * process died after the provider was called: it may have reached the person), unknown.
 */
export function communicationStatus(m: Pick<VersionedMessage, 'status' | 'last_error'>): {
  status: EventStatus
  reason?: string
} {
  switch (m.status) {
    case 'queued':
      return { status: 'in-progress' }
    case 'sent':
    case 'delivered':
      return { status: 'completed' }
    case 'undelivered':
      return { status: 'stopped', reason: m.last_error ?? 'undelivered' }
    case 'suppressed':
      return { status: 'not-done', reason: 'suppressed: the recipient address opted out' }
    case 'failed':
      return {
        status: m.last_error?.startsWith('outcome unknown') ? 'unknown' : 'not-done',
        reason: m.last_error ?? 'failed',
      }
  }
}

/** Whom it went to: the patient, or their legal guardian (no resource of their own: a name). */
function recipientOf(m: VersionedMessage): NonNullable<Communication['recipient']>[number] {
  return m.recipient.role === 'patient'
    ? { reference: `Patient/${m.patient_id}`, display: m.recipient.name }
    : { type: 'RelatedPerson', display: m.recipient.name }
}

/**
 * A message as FHIR R4 `Communication` (README "FHIR"): what the native API shows of it and no
 * more (no body, no address), the company as sender, the appointment it is about.
 */
export function toFhirCommunication(companyId: number, m: CommunicationRow): Communication {
  const { status, reason } = communicationStatus(m)
  const medium: CodeableConcept = { coding: [{ system: PARTICIPATION_MODE, ...MEDIUM[m.channel] }] }
  return {
    resourceType: 'Communication',
    id: m.id,
    meta: { versionId: String(m.version), lastUpdated: m.updated_at },
    status,
    ...(reason ? { statusReason: { text: reason } } : {}),
    ...(m.template === 'appointment_reminder'
      ? { category: [{ coding: [{ system: CATEGORY, code: 'reminder', display: 'Reminder' }] }] }
      : {}),
    medium: [medium],
    subject: { reference: `Patient/${m.patient_id}` },
    ...(m.subject ? { topic: { text: m.subject } } : {}),
    ...(m.appointment_id ? { about: [{ reference: `Appointment/${m.appointment_id}` }] } : {}),
    ...(m.sent_at ? { sent: m.sent_at } : {}),
    recipient: [recipientOf(m)],
    sender: { reference: `Organization/${companyId}` },
    ...(m.override_guardian
      ? {
          note: [
            { text: 'Sent to the patient, who requires a legal guardian, on purpose (override_guardian)' },
          ],
        }
      : {}),
  }
}

/** `GET /fhir/R4/Communication/<id>`: a message of the company within the token's centers, else null. */
export async function readFhirCommunication(
  ctx: Ctx,
  store: CommunicationStore,
  id: string,
): Promise<Communication | null> {
  if (!isUuid(id)) return null
  const m = await store.findCommunication(ctx.auth.companyId, id)
  return m && centerVisible(visibleCenters(ctx.auth, undefined), m.codalmacen)
    ? toFhirCommunication(ctx.auth.companyId, m)
    : null
}

/** `GET /fhir/R4/Communication?...`: the company's messages within the token's centers (as the list). */
export async function searchFhirCommunications(
  ctx: Ctx,
  store: CommunicationStore,
  search: FhirSearch,
): Promise<FhirPage<Communication>> {
  const page = await store.fhirSearch(ctx.auth.companyId, visibleCenters(ctx.auth, undefined), search)
  return fhirPageOf(page, (m) => toFhirCommunication(ctx.auth.companyId, m))
}
