import { createHash } from 'node:crypto'
import {
  ValidationFailed,
  assertCenter,
  findVisible,
  idempotencyOf,
  keysetPage,
  uuidv7,
  visibleCenters,
  visibleRow,
  type Ctx,
  type Page,
  type StoredResponse,
  UnknownPatient,
} from '@clinic/platform/core'
import { consentEvent } from '../events/consent-events'
import type {
  Consent,
  ConsentTemplate,
  CreateConsentInput,
  CreateTemplateInput,
  ListConsentsInput,
  ListTemplatesInput,
  WithdrawInput,
} from '../schemas/consent'
import { CONSENT_KEYSET, TEMPLATE_KEYSET } from './consent-keysets'
import type { ClinicNames, ConsentStore } from './consent-store'
import type { ContentStore } from './content-store'
import type { AppointmentDirectory, ExamDirectory, PatientContact, PatientDirectory } from './directories'
import { InvalidTransition, UnknownTemplate } from './errors'
import { checkReferences } from './references'

/** DESIGN.md section 16: a request expires in 7 days unless it says otherwise, in 90 at most. */
export const DEFAULT_CONSENT_DAYS = 7
export const MAX_CONSENT_DAYS = 90
const DAY_MS = 86_400_000
/**
 * The time zone a consent's times are written in. The gateway's identity keeps no time zone per
 * center yet, so every consent takes the house's (that of appointments and practitioners too).
 */
export const DEFAULT_TIME_ZONE = 'Europe/Madrid'

export const textHash = (body: string) => createHash('sha256').update(body, 'utf8').digest('hex')

export interface ConsentDeps {
  store: ConsentStore
  content: ContentStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  exams: ExamDirectory
  clock: () => Date
}

/**
 * A new version of a template key and language; older versions stay readable. Its center is the
 * body's `codalmacen`, else the query's, else none (the whole company's); a token limited to
 * centers must name one of them, as for any record (DESIGN.md section 2).
 */
export async function createTemplate(
  ctx: Ctx,
  store: ConsentStore,
  input: CreateTemplateInput,
  queryCenter?: string,
): Promise<ConsentTemplate> {
  const { codalmacen: bodyCenter, ...fields } = input
  const codalmacen = bodyCenter ?? queryCenter ?? null
  if (codalmacen !== null) assertCenter(ctx.auth, codalmacen)
  else if (ctx.auth.allowedCenters)
    throw new ValidationFailed([
      { path: '/codalmacen', message: 'is required for a token limited to centers' },
    ])
  const template = await store.transaction(ctx.auth.companyId, (tx) =>
    tx.insertTemplate(uuidv7(), { ...fields, codalmacen, text_sha256: textHash(fields.body) }),
  )
  ctx.log.info(
    { template_id: template.id, key: template.key, version: template.version },
    'consent template created',
  )
  return template
}

/** Newest first; a token limited to centers, or `codalmacen`, sees those centers' templates only. */
export function listTemplates(
  ctx: Ctx,
  store: ConsentStore,
  input: ListTemplatesInput,
): Promise<Page<ConsentTemplate>> {
  return keysetPage(input, {
    keyset: TEMPLATE_KEYSET,
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.listTemplates(ctx.auth.companyId, { ...page, centers, key: input.key, language: input.language }),
  })
}

export async function getTemplate(
  ctx: Ctx,
  store: ConsentStore,
  id: string,
  queryCenter?: string,
): Promise<ConsentTemplate> {
  const centers = visibleCenters(ctx.auth, queryCenter)
  return visibleRow(
    centers,
    await store.findTemplate(ctx.auth.companyId, id.toLowerCase()),
    'No such consent template',
  )
}

export function listConsents(
  ctx: Ctx,
  store: ConsentStore,
  input: ListConsentsInput,
): Promise<Page<Consent>> {
  return keysetPage(input, {
    keyset: CONSENT_KEYSET,
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, {
        ...page,
        centers,
        patientId: input.patient_id?.toLowerCase(),
        templateKey: input.template_key,
        status: input.status,
        appointmentId: input.appointment_id?.toLowerCase(),
      }),
  })
}

export const getConsent = (ctx: Ctx, store: ConsentStore, input: { id: string; queryCenter?: string }) =>
  findVisible(ctx, store, input.id.toLowerCase(), {
    queryCenter: input.queryCenter,
    notFound: 'No such consent',
  })

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
  const codalmacen = b.codalmacen ?? input.queryCenter ?? null
  if (codalmacen !== null) assertCenter(ctx.auth, codalmacen)
  else if (ctx.auth.allowedCenters)
    throw new ValidationFailed([
      { path: '/codalmacen', message: 'is required for a token limited to centers' },
    ])
  const now = deps.clock()
  const expiresAt = b.expires_at
    ? new Date(b.expires_at)
    : new Date(now.getTime() + DEFAULT_CONSENT_DAYS * DAY_MS)
  if (!(expiresAt.getTime() > now.getTime()))
    throw new ValidationFailed([{ path: '/expires_at', message: 'must be in the future' }])
  // A link is a key to a patient's record: it lives weeks, never years.
  if (expiresAt.getTime() > now.getTime() + MAX_CONSENT_DAYS * DAY_MS)
    throw new ValidationFailed([
      { path: '/expires_at', message: `must be at most ${MAX_CONSENT_DAYS} days from now` },
    ])
  const patient = await deps.patients.contact(ctx, b.patient_id.toLowerCase())
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

/** POST /consents/{id}/withdraw: a granted consent becomes withdrawn; its history stays. */
export async function withdrawConsent(
  ctx: Ctx,
  store: ConsentStore,
  input: { id: string; body: WithdrawInput; queryCenter?: string; now: Date },
): Promise<Consent> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = visibleRow(
      visible,
      await tx.findById(input.id.toLowerCase(), { forUpdate: true }),
      'No such consent',
    )
    if (current.status !== 'granted')
      throw new InvalidTransition(`only a granted consent can be withdrawn; it is ${current.status}`)
    const withdrawn = await tx.update(current.id, {
      status: 'withdrawn',
      withdrawn_at: input.now,
      withdrawal_reason: input.body.reason,
      withdrawal_signer: input.body.signer_name,
    })
    await tx.publish([consentEvent('consent.withdrawn', ctx, withdrawn)])
    return withdrawn
  })
}

/** A pending consent past its expiry becomes expired (the expiry worker, with its clock). */
export async function expireConsent(ctx: Ctx, store: ConsentStore, id: string, now: Date): Promise<boolean> {
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = await tx.findById(id, { forUpdate: true })
    if (!current || current.status !== 'pending' || Date.parse(current.expires_at) > now.getTime())
      return false
    const expired = await tx.update(id, { status: 'expired' })
    await tx.publish([consentEvent('consent.expired', ctx, expired)])
    return true
  })
}

export const nameOf = (p: PatientContact | null) => (p ? `${p.first_name} ${p.last_name}` : 'unknown patient')
