import { isoInstant } from '@clinic/platform/db'
import { companyRead, companyTransaction } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  EverywhereTx,
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
    WHERE p.opted_out IS DISTINCT FROM excluded.opted_out
  RETURNING ${COLUMNS.map((c) => `p.${c}`).join(', ')}`

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

  transaction<T>(companyId: number, fn: (tx: PreferenceTx) => Promise<T>): Promise<T> {
    return companyTransaction(this.knex, companyId, (trx) =>
      fn({
        async set(p: PreferenceWrite) {
          const { rows } = (await trx.raw(UPSERT, [
            companyId,
            p.channel,
            p.address,
            p.opted_out,
            p.source,
          ])) as { rows: Array<Record<string, unknown>> }
          if (rows[0]) return { row: toPreference(rows[0]), changed: true }
          const same = (await trx(TABLE)
            .where({ idempresa: companyId, channel: p.channel, address: p.address })
            .first([...COLUMNS])) as Record<string, unknown>
          return { row: toPreference(same), changed: false }
        },
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
        publish: (events) => enqueueEvents(trx, events),
      }),
    )
  }
}
