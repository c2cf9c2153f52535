import { isoInstant } from '@clinic/platform/db'
import { companyRead, companyTransaction } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  EverywhereTx,
  InboundKeyword,
  KeywordVerdict,
  PreferenceStore,
  PreferenceTx,
  PreferenceWrite,
  StoredPreference,
} from '../../domain/preference-store'
import type { Channel } from '../../schemas/message'
import type { PreferenceSource } from '../../schemas/preference'

const TABLE = 'preferences'
const COLUMNS = ['channel', 'address', 'opted_out', 'source', 'updated_at'] as const

const toPreference = (r: Record<string, unknown>): StoredPreference => ({
  channel: r.channel as Channel,
  address: r.address as string,
  opted_out: r.opted_out as boolean,
  source: r.source as PreferenceSource,
  updated_at: isoInstant(r.updated_at as Date | string) as string,
})

/**
 * Writes a preference only when it is new or its value changes (RETURNING then names the row);
 * the same statement as set_consent_everywhere (migrations/reminders.ts) for one company.
 */
const UPSERT = `
  INSERT INTO ${TABLE} AS p (idempresa, channel, address, opted_out, source) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (idempresa, channel, address) DO UPDATE
    SET opted_out = excluded.opted_out, source = excluded.source,
      updated_at = date_trunc('milliseconds', now()), version = p.version + 1
    WHERE p.opted_out IS DISTINCT FROM excluded.opted_out AND (p.source = 'api' OR ?::boolean)
  RETURNING ${COLUMNS.map((c) => `p.${c}`).join(', ')}`

/** messages_address (idempresa, recipient_address, created_at) finds them; the center filters. */
const messagedAt = (
  knex: Knex,
  companyId: number,
  channel: Channel,
  address: string,
  centers: readonly string[],
) =>
  knex('messages')
    .where({ idempresa: companyId, channel, recipient_address: address })
    .whereIn('codalmacen', [...centers])
    .select(knex.raw('1 AS found'))
    .limit(1)

/**
 * `comms.preferences`: consent per company, channel and address. Company reads and writes run
 * under row-level security (companyRead, companyTransaction); only `everywhere` crosses companies,
 * through the SECURITY DEFINER function an inbound SMS keyword needs.
 */
export class PreferencesRepository implements PreferenceStore {
  constructor(private readonly knex: Knex) {}

  async find(companyId: number, address: string, channels: readonly Channel[]) {
    const rows = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex(TABLE)
        .where({ idempresa: companyId, address })
        .whereIn('channel', [...channels])
        .select([...COLUMNS]),
    )
    return rows.map(toPreference)
  }

  async messagedAt(companyId: number, channel: Channel, address: string, centers: readonly string[]) {
    const rows = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      messagedAt(this.knex, companyId, channel, address, centers),
    )
    return rows.length > 0
  }

  transaction<T>(companyId: number, fn: (tx: PreferenceTx) => Promise<T>): Promise<T> {
    return companyTransaction(this.knex, companyId, (trx) =>
      fn({
        async set(p: PreferenceWrite, o: { overridePerson: boolean }) {
          const key = { idempresa: companyId, channel: p.channel, address: p.address }
          const read = async (lock: boolean) => {
            const q = trx(TABLE)
              .where(key)
              .first([...COLUMNS])
            const r = (await (lock ? q.forUpdate() : q)) as Record<string, unknown> | undefined
            return r ? toPreference(r) : undefined
          }
          // Who set it before (locked to the commit), so the answer can say whose choice it changed.
          const before = await read(true)
          const { rows } = (await trx.raw(UPSERT, [
            companyId,
            p.channel,
            p.address,
            p.opted_out,
            p.source,
            o.overridePerson,
          ])) as {
            rows: Array<Record<string, unknown>>
          }
          if (rows[0]) {
            const overrode = before !== undefined && before.source !== 'api' && p.source === 'api'
            return { row: toPreference(rows[0]), changed: true, refused: false, overrode }
          }
          // Not written: the same value, or (a row the upsert guards) the person's own choice.
          const row = (await read(false))!
          return { row, changed: false, refused: row.opted_out !== p.opted_out, overrode: false }
        },
        messagedAt: async (channel, address, centers) =>
          ((await messagedAt(trx, companyId, channel, address, centers)) as unknown[]).length > 0,
        async messageAddress(messageId: string) {
          const row = (await trx('messages')
            .where({ idempresa: companyId, id: messageId })
            .first(['channel', 'recipient_address'])) as Record<string, unknown> | undefined
          return row ? { channel: row.channel as Channel, address: row.recipient_address as string } : null
        },
        publish: (events) => enqueueEvents(trx, events),
      }),
    )
  }

  everywhere<T>(fn: (tx: EverywhereTx) => Promise<T>): Promise<T> {
    return this.knex.transaction((trx) =>
      fn({
        async setEverywhere(p: PreferenceWrite) {
          const { rows } = (await trx.raw('select * from set_consent_everywhere(?, ?, ?, ?)', [
            p.channel,
            p.address,
            p.opted_out,
            p.source,
          ])) as { rows: Array<Record<string, unknown>> }
          return rows.map((r) => ({ companyId: r.idempresa as number, row: toPreference(r) }))
        },
        async recordKeyword(k: InboundKeyword) {
          const { rows } = (await trx.raw('select record_sms_keyword(?, ?, ?, ?) AS verdict', [
            k.sid,
            k.sender,
            k.sentAt.toISOString(),
            k.optedOut,
          ])) as { rows: Array<{ verdict: KeywordVerdict }> }
          return rows[0]!.verdict
        },
        publish: (events) => enqueueEvents(trx, events),
      }),
    )
  }
}
