import { isUuid, type FhirSearch } from '@clinic/platform/core'
import {
  TenantRepository,
  companyRowById,
  fhirSearchPage,
  isoInstant,
  keysetPageParts,
  whereDateBounds,
} from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  ListFilter,
  MessageStore,
  MessageTx,
  NewMessage,
  QuotaCheck,
  ReceiptTx,
} from '../../domain/message-store'
import type { CommunicationRow, CommunicationStore } from '../../domain/fhir-communication'
import { MESSAGE_KEYSET } from '../../domain/read-messages'
import type { Message, VersionedMessage } from '../../schemas/message'

export const TABLE = 'messages'

/**
 * A row (any company's) as the API shows it: no company column, no body, instants in UTC, and
 * `sending` (a worker holds it; DESIGN.md lists no such status) shown as `queued`.
 */
export function toMessage(r: Record<string, unknown>): VersionedMessage {
  const iso = (v: unknown) => isoInstant(v as Date | string | null)
  return {
    id: r.id as string,
    patient_id: r.patient_id as string,
    appointment_id: (r.appointment_id as string | null) ?? null,
    codalmacen: (r.codalmacen as string | null) ?? null,
    status: (r.status === 'sending' ? 'queued' : r.status) as Message['status'],
    recipient: {
      role: r.recipient_role as Message['recipient']['role'],
      name: r.recipient_name as string,
      address: r.recipient_address as string,
    },
    channel: r.channel as Message['channel'],
    subject: (r.subject as string | null) ?? null,
    template: (r.template as string | null) ?? null,
    override_guardian: r.override_guardian === true,
    attempts: r.attempts as number,
    last_error: (r.last_error as string | null) ?? null,
    provider_id: (r.provider_id as string | null) ?? null,
    created_at: iso(r.created_at) as string,
    sent_at: iso(r.sent_at),
    version: r.version as number,
  }
}

export const MESSAGE_COLUMNS = [
  'id',
  'patient_id',
  'appointment_id',
  'codalmacen',
  'status',
  'recipient_role',
  'recipient_name',
  'recipient_address',
  'channel',
  'subject',
  'template',
  'override_guardian',
  'attempts',
  'last_error',
  'provider_id',
  'created_at',
  'sent_at',
  'version',
]

/** What FHIR reads of a row: what the API shows, and when it last changed (meta.lastUpdated). */
const FHIR_COLUMNS = [...MESSAGE_COLUMNS, 'updated_at']
const toCommunicationRow = (r: Record<string, unknown>): CommunicationRow => ({
  ...toMessage(r),
  updated_at: isoInstant(r.updated_at as Date | string) as string,
})

/** The first key of the per-address advisory lock of the hourly quota (any constant int4). */
const ADDRESS_LOCK = 740_714

/** Seconds from the database's now to `instant` (an SQL expression), at least 1. */
const secondsUntil = (instant: string) => `greatest(1, ceil(extract(epoch FROM ${instant} - now())))::int`

/**
 * What a send (or a reminder) may do in company `companyId`'s transaction `trx`: that transaction
 * must be the company's (companyTransaction: row-level security). The reminder worker builds its
 * own from the transaction that settles the reminder.
 */
export function messageTx(companyId: number, trx: Knex.Transaction): MessageTx {
  return {
    async insert(id: string, f: NewMessage) {
      const [row] = await trx(TABLE)
        .insert({ idempresa: companyId, id, ...f })
        .returning(MESSAGE_COLUMNS)
      return toMessage(row as Record<string, unknown>)
    },
    async optedOut(channel, address) {
      // Both sides normalised (normaliseAddress; migration 0007 for rows written before).
      const row = await trx('preferences')
        .where({ idempresa: companyId, channel, opted_out: true, address })
        .first('address')
      return row !== undefined
    },
    async admitToAddress(address, limit): Promise<QuotaCheck> {
      await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?::text || chr(31) || ?::text))', [
        ADDRESS_LOCK,
        String(companyId),
        address,
      ])
      // messages_address (idempresa, recipient_address, created_at); read after the lock, so the
      // admissions that held it before are committed and counted.
      const recent = () =>
        trx(TABLE)
          .where({ idempresa: companyId, recipient_address: address })
          .whereNot('status', 'suppressed')
          .where('created_at', '>', trx.raw("now() - interval '1 hour'"))
      const [{ n }] = (await recent().count({ n: '*' })) as [{ n: string | number }]
      const count = Number(n)
      if (count < limit) return { admitted: true }
      // Room again when enough of the hour's messages have left the window for one more.
      const [oldest] = (await recent()
        .orderBy('created_at')
        .offset(count - limit)
        .limit(1)
        .select(trx.raw(`${secondsUntil("created_at + interval '1 hour'")} AS wait`))) as Array<{
        wait: number
      }>
      return { admitted: false, retryAfterSeconds: oldest?.wait ?? 1 }
    },
    async admitToday(channel, limit): Promise<QuotaCheck> {
      const day = "(now() AT TIME ZONE 'UTC')::date"
      if (limit > 0) {
        // One statement: concurrent admissions (any replica) queue on the row and each sees the
        // count the one before it left; no row back is a full day.
        const { rows } = (await trx.raw(
          `INSERT INTO daily_counts AS d (idempresa, channel, day, count) VALUES (?, ?, ${day}, 1)
           ON CONFLICT (idempresa, channel, day) DO UPDATE SET count = d.count + 1 WHERE d.count < ?
           RETURNING d.count`,
          [companyId, channel, limit],
        )) as { rows: unknown[] }
        if (rows.length) return { admitted: true }
      }
      const { rows } = (await trx.raw(
        `SELECT ${secondsUntil(`((${day} + 1)::timestamp AT TIME ZONE 'UTC')`)} AS wait`,
      )) as { rows: Array<{ wait: number }> }
      return { admitted: false, retryAfterSeconds: rows[0]?.wait ?? 1 }
    },
    publish: (events) => enqueueEvents(trx, events),
  }
}

/**
 * The only code that touches `comms.messages` for the API. Every statement filters by company; the
 * transaction also sets `app.idempresa` for row-level security, the second wall.
 */
export class MessagesRepository
  extends TenantRepository<MessageTx, VersionedMessage>
  implements MessageStore, CommunicationStore
{
  constructor(knex: Knex) {
    super(knex, { name: TABLE, columns: MESSAGE_COLUMNS, toRow: toMessage })
  }

  protected tx(companyId: number, trx: Knex.Transaction): MessageTx {
    return messageTx(companyId, trx)
  }

  /**
   * A receipt names a message by Twilio's sid alone: apply_receipt (SECURITY DEFINER, see the
   * migrations) finds it in any company, or keeps the receipt for the worker when the sid is not
   * recorded yet.
   */
  receiptTransaction<T>(fn: (tx: ReceiptTx) => Promise<T>): Promise<T> {
    return this.knex.transaction((trx) =>
      fn({
        async apply(r) {
          const { rows } = (await trx.raw('select * from apply_receipt(?, ?, ?)', [
            r.providerId,
            r.status,
            r.error,
          ])) as { rows: Array<Record<string, unknown>> }
          return rows.map((row) => ({ companyId: row.idempresa as number, message: toMessage(row) }))
        },
        publish: (events) => enqueueEvents(trx, events),
      }),
    )
  }

  /** One page (and one row more, to know there is a next) and the exact total: one statement. */
  async list(companyId: number, f: ListFilter): Promise<{ rows: VersionedMessage[]; total: number }> {
    const matching = this.knex(TABLE).where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.patientId) matching.where('patient_id', f.patientId)
    if (f.appointmentId) matching.where('appointment_id', f.appointmentId)
    // `sending` is shown as queued, so it is found as queued too.
    if (f.status === 'queued') matching.whereIn('status', ['queued', 'sending'])
    else if (f.status) matching.where('status', f.status)
    if (f.channel) matching.where('channel', f.channel)
    if (f.from) matching.where('created_at', '>=', f.from)
    if (f.to) matching.where('created_at', '<', f.to)
    return this.page(companyId, keysetPageParts(matching, MESSAGE_COLUMNS, MESSAGE_KEYSET, f))
  }

  /** FHIR `Communication/<id>` (one round trip); the caller checks the centers. */
  async findCommunication(companyId: number, id: string): Promise<CommunicationRow | null> {
    const row = await companyRowById<Record<string, unknown>>(this.knex, companyId, TABLE, id, FHIR_COLUMNS)
    return row ? toCommunicationRow(row) : null
  }

  /**
   * A FHIR `Communication` search: the company's messages within `centers` (as the list), `patient`
   * (each occurrence one of its ids) and `sent` (bounds on sent_at: a message not sent has none and
   * matches no `sent`); the rest (`_id`, `_lastUpdated`, order, cursor, total) is fhirSearchPage's.
   */
  async fhirSearch(companyId: number, centers: string[] | null, s: FhirSearch) {
    const matching = this.knex(TABLE).where('idempresa', companyId)
    if (centers) matching.whereIn('codalmacen', centers)
    for (const alts of s.references('patient'))
      matching.whereIn('patient_id', alts.map((r) => r.id).filter(isUuid))
    whereDateBounds(matching, 'sent_at', s.dates('sent'))
    const page = await fhirSearchPage<Record<string, unknown>>(
      this.knex,
      companyId,
      matching,
      FHIR_COLUMNS,
      s,
      {
        updatedAt: 'updated_at',
        idKind: 'uuid',
      },
    )
    return { ...page, rows: page.rows.map(toCommunicationRow) }
  }
}
