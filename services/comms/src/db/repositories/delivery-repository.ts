import { enqueueEvents } from '@clinic/platform'
import type { Knex } from 'knex'
import type { DeliveryStore } from '../../domain/deliver-message'
import { messageEvent } from '../../events/message-events'
import type { Message } from '../../schemas/message'
import { companyTransaction, setCompany } from '@clinic/platform/db'
import { MESSAGE_COLUMNS, TABLE, toMessage } from './messages-repository'

/**
 * The worker's side of `comms.messages`. `claim` and `requeue` commit on their own (the claim must
 * be durable before the provider is called); `finish` runs in the job's transaction `trx`, which
 * also records the event id in processed_events.
 */
export function deliveryStore(knex: Knex, trx: Knex.Transaction): DeliveryStore {
  return {
    claim: (companyId, id) =>
      companyTransaction(knex, companyId, async (t) => {
        const [row] = await t(TABLE)
          .where({ idempresa: companyId, id, status: 'queued' })
          .update({
            status: 'sending',
            attempts: t.raw('attempts + 1'),
            claimed_at: t.raw('now()'),
            updated_at: t.raw('now()'),
            version: t.raw('version + 1'),
          })
          .returning([...MESSAGE_COLUMNS, 'body', 'language'])
        return row ? { ...toMessage(row), body: row.body as string, language: row.language as string } : null
      }),
    requeue: async (companyId, id, error) => {
      await companyTransaction(knex, companyId, (t) =>
        t(TABLE)
          .where({ idempresa: companyId, id, status: 'sending' })
          .update({
            status: 'queued',
            last_error: error,
            updated_at: t.raw('now()'),
            version: t.raw('version + 1'),
          }),
      )
    },
    finish: async (companyId, id, outcome) => {
      await setCompany(trx, companyId)
      const values =
        'providerId' in outcome
          ? { status: 'sent', provider_id: outcome.providerId, sent_at: trx.raw('now()'), last_error: null }
          : { status: 'failed', last_error: outcome.error }
      const [row] = await trx(TABLE)
        .where({ idempresa: companyId, id, status: 'sending' })
        .update({ ...values, updated_at: trx.raw('now()'), version: trx.raw('version + 1') })
        .returning(MESSAGE_COLUMNS)
      return row ? toMessage(row) : null
    },
    applyEarlyReceipt: async (providerId) => {
      const { rows } = (await trx.raw('select * from apply_early_receipt(?)', [providerId])) as {
        rows: Array<Record<string, unknown>>
      }
      return rows[0] ? toMessage(rows[0]) : null
    },
    publish: (events) => enqueueEvents(trx, events),
  }
}

/**
 * Messages left `sending` longer than `staleMinutes` (the worker died between claiming and
 * recording the outcome) become `failed` with "outcome unknown": never resent (at most once).
 */
export async function failStaleSending(knex: Knex, staleMinutes: number): Promise<Message[]> {
  return knex.transaction(async (trx) => {
    const { rows } = (await trx.raw('select * from fail_stale_sending(?, ?)', [
      staleMinutes,
      'outcome unknown: the worker stopped while sending; not resent',
    ])) as { rows: Array<Record<string, unknown>> }
    const messages = rows.map((r) => ({ companyId: r.idempresa as number, m: toMessage(r) }))
    await enqueueEvents(
      trx,
      messages.map(({ companyId, m }) => messageEvent('comms.message.failed', companyId, m)),
    )
    return messages.map(({ m }) => m)
  })
}

/** What the delivery worker needs of `comms.messages` (its DeliveryStorage, src/worker.ts). */
export const deliveryRepository = (knex: Knex) => ({
  store: (trx: Knex.Transaction) => deliveryStore(knex, trx),
  failStaleSending: (staleMinutes: number) => failStaleSending(knex, staleMinutes),
})
