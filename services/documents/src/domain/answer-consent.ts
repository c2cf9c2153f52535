import { createHash } from 'node:crypto'
import { ValidationFailed, uuidv7, type Ctx } from '@clinic/platform/core'
import { consentEvent, consentGranted } from '../events/consent-events'
import { documentCreated } from '../events/document-events'
import type { Consent, Evidence } from '../schemas/consent'
import type { ConsentTx } from './consent-store'
import type { StagedContent } from './content-store'
import type { ConsentDeps } from './consent-rules'
import { getConsent } from './get-consent'
import { InvalidTransition, SignerMismatch } from './errors'
import { namesMatch } from './signer-name'

/** Whose behalf the signer acts on, and the signer's name on the patient's record. */
export interface Who {
  patientName: string
  signerOnFile: string | null
}

/** The answer of a signer (through the link, or in the clinic), as it is recorded. */
export interface Answer {
  accept: boolean
  evidence: Omit<
    Evidence,
    'answer' | 'text_sha256' | 'signed_at' | 'signer_name_on_file' | 'signer_name_matches'
  >
  /** A scanned form the clinic attached (in person), instead of the rendered PDF. */
  documentId?: string
}

/**
 * Grants or refuses a pending consent (409 invalid_transition otherwise, and for one past its
 * expiry that the expiry worker has not expired yet), with its evidence. A grant renders the signed
 * text and evidence as a PDF, stored as a `consent` document in the same transaction (its bytes
 * staged first), unless the clinic attached its own scanned form.
 */
export async function answerConsent(
  ctx: Ctx,
  deps: ConsentDeps,
  id: string,
  answer: Answer,
  o: { queryCenter?: string; who: (consent: Consent) => Promise<Who> },
): Promise<Consent> {
  const companyId = ctx.auth.companyId
  const current = await getConsent(ctx, deps.store, { id, queryCenter: o.queryCenter })
  if (current.status !== 'pending') throw new InvalidTransition(`the consent is ${current.status}`)
  const now = deps.clock()
  // Past expires_at it is expired (DESIGN.md section 16), whether or not the worker got to it yet.
  if (Date.parse(current.expires_at) <= now.getTime())
    throw new InvalidTransition(`the consent expired at ${current.expires_at}`)
  // The consent names who signs (the guardian of a patient who requires one): nobody else can.
  if (answer.evidence.signer_role !== current.signer_role)
    throw new SignerMismatch(current.signer_role, answer.evidence.signer_role)
  const template = await deps.store.templateOf(companyId, current)
  const who = await o.who(current)
  const evidence: Evidence = {
    ...answer.evidence,
    // The name as typed beside the name on file: staff see a mismatch (a name typed is compared).
    signer_name_on_file: who.signerOnFile,
    signer_name_matches: answer.evidence.signer_name
      ? namesMatch(answer.evidence.signer_name, who.signerOnFile)
      : null,
    signed_at: now.toISOString(),
    text_sha256: current.text_sha256,
    answer: answer.accept ? 'accept' : 'decline',
  }
  let pdf: { staged: StagedContent; bytes: Buffer; sha256: string } | undefined
  if (answer.accept && !answer.documentId) {
    const bytes = await deps.renderPdf({
      consent: current,
      template,
      evidence,
      patientName: who.patientName,
      clinic: await deps.store.clinicOf(companyId, current.id),
    })
    const staged = deps.content.stage(companyId)
    pdf = { staged, bytes, sha256: createHash('sha256').update(bytes).digest('hex') }
    await staged.write(bytes)
    await staged.finish()
  }
  try {
    const consent = await deps.store.transaction(companyId, async (tx) => {
      const locked = await tx.findById(current.id, { forUpdate: true })
      if (!locked || locked.status !== 'pending')
        throw new InvalidTransition(`the consent is ${locked?.status ?? 'gone'}`)
      if (!answer.accept) {
        const refused = await tx.update(current.id, { status: 'refused', evidence })
        await tx.publish([consentEvent('consent.refused', ctx, refused)])
        return refused
      }
      const documentId = answer.documentId ?? (await storePdf(ctx, tx, current, pdf!))
      if (answer.documentId) await attachedDocument(tx, answer.documentId, current.patient_id)
      const granted = await tx.update(current.id, { status: 'granted', evidence, document_id: documentId })
      await tx.publish([consentGranted(ctx, granted)])
      return granted
    })
    pdf = undefined
    ctx.log.info({ consent_id: consent.id, status: consent.status }, 'consent answered')
    return consent
  } finally {
    // Not adopted (the transaction failed): the staged PDF goes.
    if (pdf) await pdf.staged.discard()
  }
}

/**
 * A scanned form attached in person must be a `consent` document of the same patient. Its row is
 * locked until the grant commits, so a concurrent DELETE waits and then sees the consent.
 */
async function attachedDocument(tx: ConsentTx, documentId: string, patientId: string) {
  const doc = await tx.documents.findById(documentId.toLowerCase(), { forUpdate: true })
  if (!doc || doc.status !== 'available' || doc.patient_id !== patientId || doc.category !== 'consent')
    throw new ValidationFailed([
      {
        path: '/document_id',
        message: "must be an available document of category consent of the consent's patient",
      },
    ])
}

async function storePdf(
  ctx: Ctx,
  tx: ConsentTx,
  consent: Consent,
  pdf: { staged: StagedContent; bytes: Buffer; sha256: string },
): Promise<string> {
  await tx.documents.content.adopt(pdf.staged.uploadId, pdf.sha256, pdf.bytes.length)
  const document = await tx.documents.insert(uuidv7(), {
    patient_id: consent.patient_id,
    category: 'consent',
    title: `Consent ${consent.template_key} v${consent.template_version}`,
    codalmacen: consent.codalmacen,
    exam_id: consent.exam_id,
    appointment_id: consent.appointment_id,
    filename: `consent-${consent.template_key}-v${consent.template_version}.pdf`,
    content_type: 'application/pdf',
    size_bytes: pdf.bytes.length,
    sha256: pdf.sha256,
    uploaded_by: ctx.auth.username,
  })
  await tx.publish([documentCreated(ctx, document)])
  return document.id
}
