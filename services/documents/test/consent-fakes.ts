import { NotFound, type CloudEvent } from '@clinic/platform/core'
import { FakeTenantStore, type FakeScope } from '@clinic/platform/testing'
import type { ConsentDeps } from '../src/domain/consent-rules'
import { renderConsentPdf } from '../src/render/consent-pdf'
import type {
  ClinicNames,
  ConsentFhirFilter,
  ConsentFilter,
  ConsentStore,
  ConsentTx,
  NewConsent,
  TemplateFilter,
} from '../src/domain/consent-store'
import type { DocumentTx } from '../src/domain/document-store'
import type { Consent, ConsentTemplate } from '../src/schemas/consent'
import { FakeDocumentStore, FakePatients, FakeRecords, NOW, fakeId } from './fakes'

/** What a consent's row holds beside what the API shows. */
interface Extras {
  link_id: string
  template_id: string
  clinic: ClinicNames
  withdrawal_signer: string | null
}

interface Side {
  templates: ConsentTemplate[]
  extras: Map<string, Extras>
}

/**
 * The consents store in memory: consents on the platform's FakeTenantStore, templates and each
 * consent's link id and clinic names beside them, and the documents of a grant (a FakeDocumentStore)
 * in the same transaction: all kept, or all rolled back, together.
 */
export class FakeConsentStore extends FakeTenantStore<ConsentTx, Consent> implements ConsentStore {
  readonly side = new Map<number, Side>()
  readonly filters: Array<ConsentFilter | TemplateFilter> = []
  /** The filters `fhirSearch` was given (the search itself is PostgreSQL's: test/int/fhir.int.test.ts). */
  readonly fhirFilters: ConsentFhirFilter[] = []
  /** Consent ids read with `forUpdate`, in order. */
  readonly locked: string[] = []

  constructor(
    readonly documents = new FakeDocumentStore(),
    readonly clock: () => Date = () => NOW,
  ) {
    super((scope) => this.txOf(scope))
  }

  private txOf(scope: FakeScope<Consent>): ConsentTx {
    const side = this.sideOf(scope.companyId)
    const now = () => this.clock().toISOString()
    return {
      findById: async (id, opts) => {
        if (opts?.forUpdate) this.locked.push(id)
        return scope.get(id)
      },
      insertTemplate: async (id, t) => {
        const versions = side.templates.filter((x) => x.key === t.key && x.language === t.language)
        const template = { id, ...t, version: versions.length + 1, created_at: now() }
        side.templates.push(template)
        return structuredClone(template)
      },
      insert: async (id, c) => this.insertConsent(scope, side, id, c),
      update: async (id, { withdrawal_signer, withdrawn_at, ...changes }) => {
        const row = scope.get(id)
        if (!row) throw new NotFound('No such consent')
        if (withdrawal_signer !== undefined) side.extras.get(id)!.withdrawal_signer = withdrawal_signer
        return scope.put({
          ...row,
          ...changes,
          ...(withdrawn_at ? { withdrawn_at: withdrawn_at.toISOString() } : {}),
          version: row.version + 1,
          updated_at: now(),
        })
      },
      documents: undefined as unknown as DocumentTx,
      publish: async (events: CloudEvent[]) => scope.publish(events),
    }
  }

  private insertConsent(scope: FakeScope<Consent>, side: Side, id: string, c: NewConsent) {
    const { link_id, template_id, clinic_name, center_name, time_zone, expires_at, ...fields } = c
    side.extras.set(id, {
      link_id,
      template_id,
      clinic: { name: clinic_name, center: center_name, timeZone: time_zone },
      withdrawal_signer: null,
    })
    const now = this.clock().toISOString()
    return scope.put({
      id,
      ...fields,
      expires_at: expires_at.toISOString(),
      status: 'pending',
      evidence: null,
      document_id: null,
      withdrawn_at: null,
      withdrawal_reason: null,
      created_at: now,
      updated_at: now,
      version: 1,
    })
  }

  /** The consent's documents are written in its transaction; the side tables roll back with it. */
  override async transaction<T>(companyId: number, fn: (tx: ConsentTx) => Promise<T>): Promise<T> {
    const before = structuredClone(this.sideOf(companyId))
    try {
      return await this.documents.transaction(companyId, (documents) =>
        super.transaction(companyId, (tx) => fn({ ...tx, documents })),
      )
    } catch (err) {
      this.side.set(companyId, before)
      throw err
    }
  }

  sideOf(companyId: number): Side {
    let s = this.side.get(companyId)
    if (!s) this.side.set(companyId, (s = { templates: [], extras: new Map() }))
    return s
  }

  async list(companyId: number, filter: ConsentFilter) {
    this.filters.push(filter)
    const rows = [...(this.rows.get(companyId)?.values() ?? [])]
    return { rows: rows.slice(filter.offset, filter.offset + filter.limit), total: rows.length }
  }

  /** Every consent of the company, whatever the filter (recorded), on one page. */
  async fhirSearch(companyId: number, filter: ConsentFhirFilter) {
    this.fhirFilters.push(filter)
    const rows = [...(this.rows.get(companyId)?.values() ?? [])]
    return { rows, total: rows.length, next: null }
  }

  async listTemplates(companyId: number, filter: TemplateFilter) {
    this.filters.push(filter)
    const rows = this.sideOf(companyId).templates
    return {
      rows: structuredClone(rows.slice(filter.offset, filter.offset + filter.limit)),
      total: rows.length,
    }
  }

  async findTemplate(companyId: number, id: string) {
    return structuredClone(this.sideOf(companyId).templates.find((t) => t.id === id) ?? null)
  }

  async latestTemplate(companyId: number, key: string, language: string) {
    const versions = this.sideOf(companyId).templates.filter((t) => t.key === key && t.language === language)
    return structuredClone(versions.at(-1) ?? null)
  }

  async templateOf(companyId: number, c: Consent) {
    const template = this.sideOf(companyId).templates.find(
      (t) => t.key === c.template_key && t.language === c.language && t.version === c.template_version,
    )
    if (!template) throw new Error(`the template of consent ${c.id} is missing`)
    return structuredClone(template)
  }

  async due(): Promise<Array<{ companyId: number; id: string }>> {
    throw new Error('not a use case: the expiry worker asks the repository')
  }

  async clinicOf(companyId: number, consentId: string) {
    const extras = this.sideOf(companyId).extras.get(consentId)
    if (!extras) throw new NotFound('No such consent')
    return { ...extras.clinic }
  }

  async linkConsent(companyId: number, id: string) {
    const row = await this.findById(companyId, id)
    return row ? { ...row, link_id: this.sideOf(companyId).extras.get(id)!.link_id } : null
  }

  /** What a consent's row holds beside what the API shows. */
  extrasOf(companyId: number, id: string): Extras {
    return structuredClone(this.sideOf(companyId).extras.get(id)!)
  }

  /** A committed template of that company, the next version of its key and language. */
  addTemplate(companyId: number, t: Partial<ConsentTemplate> = {}): ConsentTemplate {
    const templates = this.sideOf(companyId).templates
    const key = t.key ?? 'cataract-surgery'
    const language = t.language ?? 'es'
    const template: ConsentTemplate = {
      id: fakeId(),
      key,
      language,
      title: 'Cirugía de cataratas',
      body: 'Se me ha explicado la cirugía.\n\nAutorizo la intervención.',
      text_sha256: 'b'.repeat(64),
      codalmacen: null,
      created_at: NOW.toISOString(),
      version: templates.filter((x) => x.key === key && x.language === language).length + 1,
      ...t,
    }
    templates.push(template)
    return structuredClone(template)
  }
}

/** A consent use case's dependencies, all fakes, on a clock the test moves (`at`). */
export function consentWorld(start = NOW) {
  const time = { now: start }
  const clock = () => time.now
  const documents = new FakeDocumentStore(undefined, clock)
  const store = new FakeConsentStore(documents, clock)
  const patients = new FakePatients()
  const appointments = new FakeRecords()
  const exams = new FakeRecords()
  const deps: ConsentDeps = {
    store,
    content: documents.content,
    patients,
    appointments,
    exams,
    renderPdf: renderConsentPdf,
    clock,
  }
  return {
    time,
    store,
    documents,
    content: documents.content,
    patients,
    appointments,
    exams,
    deps,
    /** Moves the clock to `iso` (or by `ms`). */
    at: (t: string | number) => {
      time.now = typeof t === 'string' ? new Date(t) : new Date(time.now.getTime() + t)
    },
  }
}
