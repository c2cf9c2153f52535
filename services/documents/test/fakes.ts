import { NotFound, UpstreamUnavailable, type Ctx, type Principal } from '@clinic/platform/core'
import {
  FakeTenantStore,
  internalAnswers,
  testCtx,
  testPrincipal,
  type FakeScope,
} from '@clinic/platform/testing'
import pino from 'pino'
import type { ContentStore, ContentTx, StagedContent } from '../src/domain/content-store'
import type {
  AppointmentDirectory,
  ExamDirectory,
  OwnedRecord,
  PatientContact,
  PatientDirectory,
} from '../src/domain/directories'
import type {
  DocumentFhirFilter,
  DocumentFilter,
  DocumentStore,
  DocumentTx,
} from '../src/domain/document-store'
import type { UploadPart } from '../src/domain/multipart'
import type { Document } from '../src/schemas/document'

/**
 * The documents stores in memory, for unit tests of the use cases (STYLE 9: fakes with real
 * behaviour, not mocks): documents on the platform's FakeTenantStore (transactions that keep
 * nothing when they throw, Idempotency-Keys, the outbox), contents staged, adopted and released
 * with the transaction, and the other services as lookups per company. Time is the injected clock.
 */

export const NOW = new Date('2026-11-27T10:00:00.000Z')

/** What happened to an upload's staged bytes (`lost`: adopted, then discarded: a content gone). */
export type UploadState = 'open' | 'finished' | 'discarded' | 'adopted' | 'dropped' | 'lost'

/** Contents per company: staged uploads by id, and the company's blobs by sha256. */
export class FakeContentStore implements ContentStore {
  readonly uploads = new Map<string, { companyId: number; chunks: Buffer[]; state: UploadState }>()
  readonly blobs = new Map<string, { uploadId: string; bytes: Buffer }>()
  /** What each committed content transaction did, in order. */
  readonly log: Array<{ op: 'adopt' | 'release'; sha256: string; holders?: string[] }> = []
  private n = 0

  stage(companyId: number): StagedContent {
    const uploadId = `upload-${++this.n}`
    const upload = { companyId, chunks: [] as Buffer[], state: 'open' as UploadState }
    this.uploads.set(uploadId, upload)
    return {
      uploadId,
      write: async (bytes) => {
        if (upload.state !== 'open') throw new Error(`write to a ${upload.state} upload`)
        upload.chunks.push(Buffer.from(bytes))
      },
      finish: async () => {
        upload.state = 'finished'
      },
      // As the real one, it drops whatever the upload wrote: an adopted content's bytes too.
      discard: async () => {
        if (upload.state === 'adopted') {
          upload.state = 'lost'
          for (const [key, blob] of this.blobs) if (blob.uploadId === uploadId) this.blobs.delete(key)
        } else upload.state = 'discarded'
      },
    }
  }

  async *read(companyId: number, sha256: string, range?: { start: number; end: number }) {
    const blob = this.blobs.get(`${companyId}:${sha256}`)
    if (!blob) throw new Error(`content ${sha256} of company ${companyId} is missing`)
    yield blob.bytes.subarray(range?.start ?? 0, (range?.end ?? blob.bytes.length - 1) + 1)
  }

  /** The bytes an upload staged. */
  staged(uploadId: string): Buffer {
    return Buffer.concat(this.uploads.get(uploadId)?.chunks ?? [])
  }

  /** A content transaction over a document transaction's rows (`holders`: available ones by sha). */
  txOf(companyId: number, holders: (sha256: string) => string[], log: FakeContentStore['log']): ContentTx {
    return {
      adopt: async (uploadId, sha256) => {
        const upload = this.uploads.get(uploadId)
        if (!upload || upload.state !== 'finished') throw new Error(`adopting a ${upload?.state} upload`)
        const key = `${companyId}:${sha256}`
        if (this.blobs.has(key)) upload.state = 'dropped'
        else {
          upload.state = 'adopted'
          this.blobs.set(key, { uploadId, bytes: Buffer.concat(upload.chunks) })
        }
        log.push({ op: 'adopt', sha256 })
      },
      release: async (sha256) => {
        const held = holders(sha256)
        if (!held.length) this.blobs.delete(`${companyId}:${sha256}`)
        log.push({ op: 'release', sha256, holders: held })
      },
    }
  }

  /** Runs `fn`; if it throws, the blobs and the uploads' states are as before. */
  async rollingBack<T>(fn: (log: FakeContentStore['log']) => Promise<T>): Promise<T> {
    const blobs = new Map(this.blobs)
    const states = new Map([...this.uploads].map(([id, u]) => [id, u.state]))
    const log: FakeContentStore['log'] = []
    try {
      const result = await fn(log)
      this.log.push(...log)
      return result
    } catch (err) {
      this.blobs.clear()
      for (const [k, v] of blobs) this.blobs.set(k, v)
      for (const [id, state] of states) this.uploads.get(id)!.state = state
      throw err
    }
  }
}

/** The document rows' transaction (also what a consent's transaction does with documents). */
function documentTx(
  store: FakeDocumentStore,
  scope: FakeScope<Document>,
  log: FakeContentStore['log'],
): DocumentTx {
  const now = () => store.clock().toISOString()
  const holders = (sha: string) =>
    scope
      .all()
      .filter((d) => d.sha256 === sha && d.status === 'available')
      .map((d) => d.id)
  return {
    findById: async (id, opts) => {
      if (opts?.forUpdate) store.locked.push(id)
      return scope.get(id)
    },
    insert: async (id, fields) =>
      scope.put({ id, ...fields, status: 'available', created_at: now(), updated_at: now(), version: 1 }),
    update: async (id, changes) => {
      const row = scope.get(id)
      if (!row) throw new NotFound('No such document')
      return scope.put({ ...row, ...changes, version: row.version + 1, updated_at: now() })
    },
    content: store.content.txOf(scope.companyId, holders, log),
    referencedByConsent: async (id) => store.referenced.has(`${scope.companyId}:${id}`),
    publish: async (events) => scope.publish(events),
  }
}

export class FakeDocumentStore extends FakeTenantStore<DocumentTx, Document> implements DocumentStore {
  /** Documents a consent points to, as `company:id` (what `referencedByConsent` answers). */
  readonly referenced = new Set<string>()
  /** Ids read with `forUpdate`, in order. */
  readonly locked: string[] = []
  /** The filters `list` was given. */
  readonly filters: DocumentFilter[] = []
  /** The filters `fhirSearch` was given (the search itself is PostgreSQL's: test/int/fhir.int.test.ts). */
  readonly fhirFilters: DocumentFhirFilter[] = []
  private log: FakeContentStore['log'] = []

  constructor(
    readonly content = new FakeContentStore(),
    readonly clock: () => Date = () => NOW,
  ) {
    super((scope) => documentTx(this, scope, this.log))
  }

  /** The content changes commit and roll back with the rows. */
  override transaction<T>(companyId: number, fn: (tx: DocumentTx) => Promise<T>): Promise<T> {
    return this.content.rollingBack((log) => {
      this.log = log
      return super.transaction(companyId, fn)
    })
  }

  async list(companyId: number, filter: DocumentFilter) {
    this.filters.push(filter)
    const rows = [...(this.rows.get(companyId)?.values() ?? [])]
    return { rows: rows.slice(filter.offset, filter.offset + filter.limit), total: rows.length }
  }

  /** Every document of the company, whatever the filter (recorded), on one page. */
  async fhirSearch(companyId: number, filter: DocumentFhirFilter) {
    this.fhirFilters.push(filter)
    const rows = [...(this.rows.get(companyId)?.values() ?? [])]
    return { rows, total: rows.length, next: null }
  }

  /** A committed document of that company (the fields given over a plain PDF's). */
  add(companyId: number, fields: Partial<Document> = {}): Document {
    return this.seed(companyId, {
      id: fakeId(),
      patient_id: fakeId(),
      category: 'report',
      title: null,
      codalmacen: 'ALM1',
      exam_id: null,
      appointment_id: null,
      filename: 'informe.pdf',
      content_type: 'application/pdf',
      size_bytes: 10,
      sha256: 'a'.repeat(64),
      uploaded_by: 'test-user',
      status: 'available',
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
      version: 1,
      ...fields,
    })
  }
}

/**
 * Another service's lookup as the domain sees it: per company, as the real one answers (another
 * company's id is unknown); `down` fails every call as an unreachable service does (503).
 */
class FakeLookup<T> {
  readonly entries = new Map<string, T>()
  readonly asked: string[] = []
  down = false
  protected lookup(ctx: Ctx, id: string): T | null {
    this.asked.push(id)
    if (this.down) throw new UpstreamUnavailable()
    return this.entries.get(`${ctx.auth.companyId}:${id}`) ?? null
  }
}

export class FakePatients extends FakeLookup<PatientContact> implements PatientDirectory {
  add(companyId: number, o: Partial<PatientContact> = {}): string {
    const id = o.id ?? fakeId()
    this.entries.set(`${companyId}:${id}`, internalAnswers.patient({ ...o, id }))
    return id
  }
  async find(ctx: Ctx, id: string) {
    return this.lookup(ctx, id)
  }
}

/** Appointments (or, as FakeExams, clinical's exams) by company and id, each with its patient. */
export class FakeRecords extends FakeLookup<OwnedRecord> implements AppointmentDirectory, ExamDirectory {
  add(companyId: number, patientId: string, id = fakeId()): string {
    this.entries.set(`${companyId}:${id}`, { id, patient_id: patientId })
    return id
  }
  async find(ctx: Ctx, id: string) {
    return this.lookup(ctx, id)
  }
}

/** A use case's context for a principal (a fresh company unless told). */
export const ctxOf = (overrides: Partial<Principal> = {}): Ctx => testCtx(testPrincipal(overrides))

/** The same, with what it logs kept in `lines` (each line as pino writes it, parsed). */
export function loggingCtxOf(overrides: Partial<Principal> = {}) {
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) })
  return { ctx: { ...ctxOf(overrides), log } as Ctx, lines }
}

/** The AppError code a use case ends with ('ok' when it does not throw). */
export const codeOf = (work: Promise<unknown>): Promise<string> =>
  work.then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? String(err),
  )

/** The problem a use case ends with: its status, code, detail and field errors. */
export const problemOf = (work: Promise<unknown>): Promise<unknown> =>
  work.then(
    () => 'ok',
    (err: { status?: number; code?: string; detail?: string; errors?: unknown }) =>
      err.code ? { status: err.status, code: err.code, detail: err.detail, errors: err.errors } : String(err),
  )

/** An upload's parts as the route hands them over: fields, then the file in `chunks` pieces. */
export async function* partsOf(
  fields: Record<string, string>,
  file?: { bytes: Buffer; filename?: string; name?: string; chunk?: number },
  after: Record<string, string> = {},
): AsyncIterable<UploadPart> {
  for (const [name, value] of Object.entries(fields)) yield { kind: 'field', name, value }
  if (file) {
    const size = file.chunk ?? 1024
    async function* bytes() {
      for (let at = 0; at < file!.bytes.length; at += size) yield file!.bytes.subarray(at, at + size)
    }
    yield { kind: 'file', name: file.name ?? 'file', filename: file.filename, bytes: bytes() }
  }
  for (const [name, value] of Object.entries(after)) yield { kind: 'field', name, value }
}

/** All of an iterable's bytes. */
export async function bytesOf(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const b of it) out.push(b)
  return Buffer.concat(out)
}

let n = 0
/** Obviously fake, unique uuids (v7 shape). */
export const fakeId = (): string => `019ab2c4-1f00-7000-8000-${(++n).toString(16).padStart(12, '0')}`
