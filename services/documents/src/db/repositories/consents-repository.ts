import { NotFound, type FhirSearch } from '@clinic/platform/core'
import { TenantRepository, applyKeyset, companyPage, companyRead, fhirSearchPage } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  ConsentFhirFilter,
  ConsentFilter,
  ConsentStore,
  ConsentTx,
  TemplateFilter,
} from '../../domain/consent-store'
import { CONSENT_KEYSET, TEMPLATE_KEYSET } from '../../domain/consent-keysets'
import type { Consent, ConsentTemplate } from '../../schemas/consent'
import { DocumentsRepository } from './documents-repository'

const COLUMNS = [
  'id',
  'patient_id',
  'template_key',
  'language',
  'template_version',
  'text_sha256',
  'signer_role',
  'status',
  'expires_at',
  'evidence',
  'document_id',
  'withdrawn_at',
  'withdrawal_reason',
  'appointment_id',
  'exam_id',
  'codalmacen',
  'created_at',
  'updated_at',
  'version',
] as const
const SELECT: string[] = [...COLUMNS]
const TEMPLATE_COLUMNS = [
  'id',
  'key',
  'language',
  'version',
  'title',
  'body',
  'text_sha256',
  'codalmacen',
  'created_at',
]

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v as string | null))

function toConsent(row: Record<string, unknown>): Consent {
  const out = {} as Record<string, unknown>
  for (const c of COLUMNS) out[c] = row[c]
  for (const c of ['expires_at', 'withdrawn_at', 'created_at', 'updated_at']) out[c] = iso(row[c])
  return out as Consent
}
const toTemplate = (row: Record<string, unknown>): ConsentTemplate =>
  ({ ...row, created_at: iso(row.created_at) }) as ConsentTemplate

/** The only code that touches `consents` and `consent_templates`. */
export class ConsentsRepository extends TenantRepository<ConsentTx, Consent> implements ConsentStore {
  private readonly documents: DocumentsRepository

  constructor(knex: Knex) {
    super(knex, { name: 'consents', columns: SELECT, toRow: toConsent })
    this.documents = new DocumentsRepository(knex)
  }

  protected tx(companyId: number, trx: Knex.Transaction): ConsentTx {
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insertTemplate(id, t) {
        // One writer of a key and language at a time: versions never collide.
        await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [companyId, `${t.key}/${t.language}`])
        const last = await trx('consent_templates')
          .where({ idempresa: companyId, key: t.key, language: t.language })
          .max({ v: 'version' })
          .first()
        const [row] = await trx('consent_templates')
          .insert({ idempresa: companyId, id, ...t, version: Number(last?.v ?? 0) + 1 })
          .returning(TEMPLATE_COLUMNS)
        return toTemplate(row as Record<string, unknown>)
      },
      async insert(id, c) {
        const [row] = await trx('consents')
          .insert({ idempresa: companyId, id, ...c })
          .returning(SELECT)
        return toConsent(row as Record<string, unknown>)
      },
      async update(id, changes) {
        const [row] = await trx('consents')
          .where({ idempresa: companyId, id })
          .update({
            ...changes,
            ...(changes.evidence ? { evidence: JSON.stringify(changes.evidence) } : {}),
            version: trx.raw('version + 1'),
            updated_at: trx.raw(`date_trunc('milliseconds', now())`),
          } as Record<string, unknown>)
          .returning(SELECT)
        if (!row) throw new NotFound('No such consent')
        return toConsent(row as Record<string, unknown>)
      },
      documents: this.documents.txOf(companyId, trx),
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  async list(companyId: number, f: ConsentFilter) {
    const matching = this.knex('consents').where({ idempresa: companyId })
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.patientId) matching.where('patient_id', f.patientId)
    if (f.templateKey) matching.where('template_key', f.templateKey)
    if (f.status) matching.where('status', f.status)
    if (f.appointmentId) matching.where('appointment_id', f.appointmentId)
    const page = matching.clone().select(SELECT)
    const orderBy = applyKeyset(page, CONSENT_KEYSET, f.after)
    page.offset(f.offset).limit(f.limit)
    return this.page(companyId, { page, total: matching.clone().count({ n: '*' }), orderBy })
  }

  /** A FHIR search (Consent): the shared part (`_id`, `_lastUpdated`, order, cursor, total) is fhirSearchPage's. */
  async fhirSearch(companyId: number, f: ConsentFhirFilter, s: FhirSearch) {
    const matching = this.knex('consents').where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    for (const ids of f.patientIds) matching.whereIn('patient_id', ids)
    for (const statuses of f.statuses) matching.whereIn('status', statuses)
    const page = await fhirSearchPage<Record<string, unknown>>(this.knex, companyId, matching, SELECT, s, {
      updatedAt: 'updated_at',
      idKind: 'uuid',
    })
    return { ...page, rows: page.rows.map(toConsent) }
  }

  async listTemplates(companyId: number, f: TemplateFilter) {
    const matching = this.knex('consent_templates').where({ idempresa: companyId })
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.key) matching.where('key', f.key)
    if (f.language) matching.where('language', f.language)
    const page = matching.clone().select(TEMPLATE_COLUMNS)
    const orderBy = applyKeyset(page, TEMPLATE_KEYSET, f.after)
    page.offset(f.offset).limit(f.limit)
    const { rows, total } = await companyPage<Record<string, unknown> & { id: unknown }>(
      this.knex,
      companyId,
      {
        page,
        total: matching.clone().count({ n: '*' }),
        orderBy,
      },
    )
    return { rows: rows.map(toTemplate), total }
  }

  async findTemplate(companyId: number, id: string) {
    const [row] = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex('consent_templates').where({ idempresa: companyId, id }).select(TEMPLATE_COLUMNS),
    )
    return row ? toTemplate(row) : null
  }

  async latestTemplate(companyId: number, key: string, language: string) {
    const [row] = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex('consent_templates')
        .where({ idempresa: companyId, key, language })
        .orderBy('version', 'desc')
        .limit(1)
        .select(TEMPLATE_COLUMNS),
    )
    return row ? toTemplate(row) : null
  }

  async templateOf(companyId: number, consent: Consent) {
    const [row] = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex('consent_templates')
        .where({
          idempresa: companyId,
          key: consent.template_key,
          language: consent.language,
          version: consent.template_version,
        })
        .select(TEMPLATE_COLUMNS),
    )
    if (!row) throw new Error(`the template of consent ${consent.id} is missing`)
    return toTemplate(row)
  }

  async due(now: Date, limit: number) {
    const { rows } = await this.knex.raw<{ rows: Array<{ idempresa: number; id: string }> }>(
      'SELECT idempresa, id FROM due_consents(?, ?)',
      [now, limit],
    )
    return rows.map((r) => ({ companyId: r.idempresa, id: r.id }))
  }

  async clinicOf(companyId: number, consentId: string) {
    const [row] = await companyRead<{
      clinic_name: string | null
      center_name: string | null
      time_zone: string
    }>(
      this.knex,
      companyId,
      this.knex('consents')
        .where({ idempresa: companyId, id: consentId })
        .select('clinic_name', 'center_name', 'time_zone'),
    )
    if (!row) throw new NotFound('No such consent')
    return { name: row.clinic_name, center: row.center_name, timeZone: row.time_zone }
  }

  async linkConsent(companyId: number, id: string) {
    const [row] = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex('consents')
        .where({ idempresa: companyId, id })
        .select([...SELECT, 'link_id']),
    )
    return row ? { ...toConsent(row), link_id: row.link_id as string } : null
  }
}
