import { createHash } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import {
  ValidationFailed,
  assertCenter,
  canonicalJson,
  findVisible,
  idempotencyOf,
  uuidv7,
  type Ctx,
  type FieldError,
  type StoredResponse,
  UnknownPatient,
} from '@clinic/platform/core'
import { documentCreated } from '../events/document-events'
import { UploadFields, type Document, type UploadFieldsInput } from '../schemas/document'
import type { ContentStore, StagedContent } from './content-store'
import { ACCEPTED, SNIFF_BYTES, detectType, type MagicNumbers } from './detect-type'
import type { AppointmentDirectory, ExamDirectory, PatientDirectory } from './directories'
import type { DocumentStore } from './document-store'
import { FileTooLarge, MalformedUpload, UnsupportedFileType } from './errors'
import { checkReferences } from './references'
import { cleanFilename } from './filename'
import type { UploadPart } from './multipart'

export interface UploadDeps {
  store: DocumentStore
  content: ContentStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  exams: ExamDirectory
  /** Reads a file's type from its first bytes. */
  magic: MagicNumbers
}

export interface UploadDocument {
  parts: AsyncIterable<UploadPart>
  /** DOCUMENTS_MAX_BYTES: one byte more and the upload is cut off (413), nothing kept. */
  maxBytes: number
  queryCenter: string | undefined
  idempotencyKey: string | undefined
  /** The request's method and path, for the Idempotency-Key's request hash. */
  method: string
  path: string
}

/** What the file part became: staged bytes, their hash, size and detected type. */
interface ReceivedFile {
  staged: StagedContent
  filename: string | undefined
  sha256: string
  size: number
  contentType: string
}

/**
 * Reads the file part as it streams: decides its type from its first bytes (415 before anything
 * is stored), stages its bytes chunk by chunk and hashes them, and stops at the first byte past
 * the limit (413). Whatever it staged is discarded on any failure.
 */
async function receiveFile(
  ctx: Ctx,
  deps: Pick<UploadDeps, 'content' | 'magic'>,
  part: Extract<UploadPart, { kind: 'file' }>,
  maxBytes: number,
): Promise<ReceivedFile> {
  const hash = createHash('sha256')
  let head: Buffer[] = []
  let headBytes = 0
  let size = 0
  let contentType: string | undefined
  let staged: StagedContent | undefined
  const decide = async () => {
    const detected = await detectType(Buffer.concat(head), deps.magic)
    if (!detected.accepted) throw new UnsupportedFileType(detected.found)
    contentType = detected.contentType
    staged = deps.content.stage(ctx.auth.companyId)
    for (const b of head) await staged.write(b)
    head = []
  }
  try {
    for await (const chunk of part.bytes) {
      size += chunk.length
      if (size > maxBytes) throw new FileTooLarge(maxBytes)
      hash.update(chunk)
      if (staged) {
        await staged.write(chunk)
        continue
      }
      head.push(chunk)
      headBytes += chunk.length
      if (headBytes >= SNIFF_BYTES) await decide()
    }
    if (!staged) await decide()
    await staged!.finish()
    return {
      staged: staged!,
      filename: part.filename,
      sha256: hash.digest('hex'),
      size,
      contentType: contentType!,
    }
  } catch (err) {
    await staged?.discard()
    throw err
  }
}

/** The text fields as the schema wants them (every error at once, as for a JSON body). */
function fieldsOf(raw: Record<string, string>): UploadFieldsInput {
  if (Value.Check(UploadFields, raw)) return raw
  const errors: FieldError[] = [...Value.Errors(UploadFields, raw)].map((e) => ({
    path: e.path || '',
    message: e.message,
  }))
  throw new ValidationFailed(errors)
}

/**
 * A document from a multipart upload (DESIGN.md section 15). The parts come as they stream; the
 * file is typed from its bytes, staged and hashed on the way. Then the fields are checked, the
 * patient (and appointment and exam, each of that patient) asked of their services, and in one transaction the document row, its
 * content (adopted, or shared with an identical one of the company) and `document.created` are
 * written. An Idempotency-Key replays when the fields and the file's bytes are the same, whatever
 * the multipart boundary.
 */
export async function uploadDocument(
  ctx: Ctx,
  deps: UploadDeps,
  input: UploadDocument,
): Promise<StoredResponse<Document>> {
  const raw: Record<string, string> = {}
  let file: ReceivedFile | undefined
  try {
    for await (const part of input.parts) {
      if (part.kind === 'file') {
        if (part.name !== 'file')
          throw new MalformedUpload(`the file goes in the part named "file", not "${part.name}"`)
        if (file) throw new MalformedUpload('one file per upload')
        file = await receiveFile(ctx, deps, part, input.maxBytes)
        continue
      }
      if (Object.hasOwn(raw, part.name)) throw new MalformedUpload(`the field "${part.name}" is sent twice`)
      raw[part.name] = part.value
    }
    if (!file) throw new ValidationFailed([{ path: '/file', message: 'is required: a part named "file"' }])
    const fields = fieldsOf(raw)
    const body = { ...fields, filename: file.filename ?? null, file_sha256: file.sha256 }
    const idempotency = idempotencyOf(ctx, {
      idempotencyKey: input.idempotencyKey,
      requestHash: createHash('sha256')
        .update(`${input.method} ${input.path}\n${canonicalJson(body)}`)
        .digest('hex'),
    })
    const prior = await deps.store.storedResponse<Document>(ctx.auth.companyId, idempotency)
    if (prior) {
      await file.staged.discard()
      await findVisible(ctx, deps.store, prior.body.id, { notFound: 'No such document' })
      return prior
    }
    const codalmacen = fields.codalmacen ?? input.queryCenter ?? null
    if (codalmacen !== null) assertCenter(ctx.auth, codalmacen)
    else if (ctx.auth.allowedCenters)
      throw new ValidationFailed([
        { path: '/codalmacen', message: 'is required for a token limited to centers' },
      ])
    const patient = await deps.patients.find(ctx, fields.patient_id.toLowerCase())
    if (!patient) throw new UnknownPatient()
    await checkReferences(ctx, deps, patient.id, {
      appointmentId: fields.appointment_id?.toLowerCase(),
      examId: fields.exam_id?.toLowerCase(),
    })
    const received = file
    const result = await deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
      await tx.content.adopt(received.staged.uploadId, received.sha256, received.size)
      const document = await tx.insert(uuidv7(), {
        patient_id: patient.id,
        category: fields.category,
        title: fields.title ?? null,
        codalmacen,
        exam_id: fields.exam_id?.toLowerCase() ?? null,
        appointment_id: fields.appointment_id?.toLowerCase() ?? null,
        filename: cleanFilename(received.filename, ACCEPTED[received.contentType] ?? 'bin'),
        content_type: received.contentType,
        size_bytes: received.size,
        sha256: received.sha256,
        uploaded_by: ctx.auth.username,
      })
      await tx.publish([documentCreated(ctx, document)])
      return { body: document }
    })
    // Adopted: the bytes are the company's now, never to be discarded. A concurrent twin under the
    // same key replayed instead: this upload's bytes were not adopted.
    if (result.replayed) await received.staged.discard()
    file = undefined
    ctx.log.info(
      { document_id: result.body.id, size_bytes: received.size, replayed: !!result.replayed },
      'document stored',
    )
    return result
  } catch (err) {
    await file?.staged.discard()
    throw err
  }
}
