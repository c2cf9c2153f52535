import {
  ValidationFailed,
  UnknownPatient,
  idempotencyOf,
  uuidv7,
  type Ctx,
  type StoredResponse,
} from '@clinic/platform/core'
import { consentEvent } from '../events/consent-events'
import type { Consent, CreateConsentInput } from '../schemas/consent'
import {
  DAY_MS,
  DEFAULT_CONSENT_DAYS,
  DEFAULT_TIME_ZONE,
  MAX_CONSENT_DAYS,
  centerOfNew,
  type ConsentDeps,
} from './consent-rules'
import type { ClinicNames } from './consent-store'
import type { PatientContact } from './directories'
import { UnknownTemplate } from './errors'
import { checkReferences } from './references'

/** When a request expires: `expires_at` if given, else in 7 days; in the future, 90 days at most. */
function expiryOf(expiresAt: string | undefined, now: Date): Date {
  const at = expiresAt ? new Date(expiresAt) : new Date(now.getTime() + DEFAULT_CONSENT_DAYS * DAY_MS)
  if (!(at.getTime() > now.getTime()))
    throw new ValidationFailed([{ path: '/expires_at', message: 'must be in the future' }])
  // A link is a key to a patient's record: it lives weeks, never years.
  if (at.getTime() > now.getTime() + MAX_CONSENT_DAYS * DAY_MS)
    throw new ValidationFailed([
      { path: '/expires_at', message: `must be at most ${MAX_CONSENT_DAYS} days from now` },
    ])
  return at
}

/**
 * POST /consents: freezes the template's latest version (and its text hash) in the language asked
 * for, else the patient's; the signer is the guardian when the patient requires one. `send` is the
 * caller's to act on (the route sends the link once the consent is stored).
 */
export async function requestConsent(
  ctx: Ctx,
  deps: ConsentDeps,
  input: {
    body: CreateConsentInput
    queryCenter?: string
    idempotencyKey: string | undefined
    requestHash: string
  },
): Promise<
  StoredResponse<Consent> & { patient: PatientContact | null; linkId: string | null; clinic: ClinicNames }
> {
  const idempotency = idempotencyOf(ctx, input)
  const prior = await deps.store.storedResponse<Consent>(ctx.auth.companyId, idempotency)
  if (prior)
    return {
      ...prior,
      patient: null,
      linkId: null,
      clinic: { name: null, center: null, timeZone: DEFAULT_TIME_ZONE },
    }
  const b = input.body
  const codalmacen = centerOfNew(ctx, b.codalmacen, input.queryCenter)
  const expiresAt = expiryOf(b.expires_at, deps.clock())
  const patient = await deps.patients.find(ctx, b.patient_id.toLowerCase())
  if (!patient) throw new UnknownPatient()
  await checkReferences(ctx, deps, patient.id, {
    appointmentId: b.appointment_id?.toLowerCase(),
    examId: b.exam_id?.toLowerCase(),
  })
  const language = b.language ?? patient.language
  const template = await deps.store.latestTemplate(ctx.auth.companyId, b.template_key, language)
  if (!template) throw new UnknownTemplate()
  const linkId = uuidv7()
  // Who asks, as the gateway's identity names them now: the message, page and PDF say so.
  const clinic: ClinicNames = {
    name: ctx.auth.names?.company ?? null,
    center: (codalmacen && ctx.auth.names?.centers[codalmacen]) || null,
    timeZone: DEFAULT_TIME_ZONE,
  }
  const result = await deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const consent = await tx.insert(uuidv7(), {
      patient_id: patient.id,
      template_id: template.id,
      template_key: template.key,
      language: template.language,
      template_version: template.version,
      text_sha256: template.text_sha256,
      signer_role: patient.requires_legal_guardian ? 'guardian' : 'patient',
      expires_at: expiresAt,
      appointment_id: b.appointment_id?.toLowerCase() ?? null,
      exam_id: b.exam_id?.toLowerCase() ?? null,
      codalmacen,
      link_id: linkId,
      clinic_name: clinic.name,
      center_name: clinic.center,
      time_zone: clinic.timeZone,
    })
    await tx.publish([consentEvent('consent.requested', ctx, consent)])
    return { body: consent }
  })
  ctx.log.info({ consent_id: result.body.id, replayed: !!result.replayed }, 'consent requested')
  return { ...result, patient, linkId, clinic }
}
