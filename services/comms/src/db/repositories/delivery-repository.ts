import { enqueueEvents } from '@clinic/platform'
import { companyTransaction } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { Cause, ClaimedMessage, DeliveryStore, DeliveryTx } from '../../domain/deliver-message'
import { messageEvent } from '../../events/message-events'
import type { Message } from '../../schemas/message'
import { MESSAGE_COLUMNS, TABLE, toMessage } from './messages-repository'

const OUTCOME_UNKNOWN = 'outcome unknown: the worker stopped while sending; not resent'

/**
 * The delivery worker's side of `comms.messages`: the rows are its jobs (claim_messages, migration
 * 0006). Each write is its own transaction: the claim must be durable before the provider is
 * called, and an outcome is written with its events.
 */
export class DeliveryRepository implements DeliveryStore {
  constructor(private readonly knex: Knex) {}

  async claim(now: Date, limit: number): Promise<ClaimedMessage[]> {
    const { rows } = await this.knex.raw<{ rows: Array<Record<string, unknown>> }>(
      'SELECT * FROM claim_messages(?, ?)',
      [now, limit],
    )
    return rows.map((r) => ({
      ...toMessage(r),
      companyId: r.idempresa as number,
      body: r.body as string,
      language: r.language as string,
      cause: (r.cause ?? {}) as Cause,
    }))
  }

  async reschedule(companyId: number, id: string, attempt: number, error: string, retryAt: Date) {
    const n = await companyTransaction(this.knex, companyId, (t) =>
      t(TABLE)
        .where({ idempresa: companyId, id, status: 'sending', attempts: attempt })
        .update({
          status: 'queued',
          last_error: error,
          next_attempt_at: retryAt,
          updated_at: t.raw('now()'),
          version: t.raw('version + 1'),
        }),
    )
    return n > 0
  }

  transaction<T>(companyId: number, work: (tx: DeliveryTx) => Promise<T>): Promise<T> {
    return companyTransaction(this.knex, companyId, (trx) =>
      work({
        finish: async (id, attempt, outcome) => {
          const values =
            'providerId' in outcome
              ? {
                  status: 'sent',
                  provider_id: outcome.providerId,
                  sent_at: trx.raw('now()'),
                  last_error: null,
                }
              : { status: 'failed', last_error: outcome.error }
          const [row] = await trx(TABLE)
            .where({ idempresa: companyId, id, status: 'sending', attempts: attempt })
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
      }),
    )
  }

  failStale(staleMinutes: number): Promise<Message[]> {
    return this.knex.transaction(async (trx) => {
      const { rows } = (await trx.raw('select * from fail_stale_sending(?, ?)', [
        staleMinutes,
        OUTCOME_UNKNOWN,
      ])) as { rows: Array<Record<string, unknown>> }
      const messages = rows.map((r) => ({ companyId: r.idempresa as number, m: toMessage(r) }))
      await enqueueEvents(
        trx,
        messages.map(({ companyId, m }) => messageEvent('comms.message.failed', companyId, m)),
      )
      return messages.map(({ m }) => m)
    })
  }
}
