import type { CloudEvent } from '@clinic/platform/core'
import { companyRead, companyTransaction } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type { LinkAction, LinkUse, LinkUseStore } from '../../domain/patient-links'

const TABLE = 'link_uses'

/** Rolls the use back, carrying what the caller gets all the same. */
class Undo<T> {
  constructor(readonly value: T) {}
}

/**
 * `comms.link_uses`: one row per patient link used (row-level security per company). The row is
 * inserted first in the transaction that then waits for the appointments service: a concurrent
 * insert of the same token blocks on it until it commits (then finds it) or rolls back (then goes
 * on as the first). The connection is held meanwhile, at most SERVICE_CALL_TIMEOUT_MS.
 */
export class LinkUsesRepository implements LinkUseStore {
  constructor(private readonly knex: Knex) {}

  async usedFor(companyId: number, tokenId: string): Promise<LinkAction | null> {
    const [row] = await companyRead<{ action: LinkAction }>(
      this.knex,
      companyId,
      this.knex(TABLE).where({ idempresa: companyId, token_id: tokenId }).select('action').limit(1),
    )
    return row?.action ?? null
  }

  recordView(companyId: number, event: CloudEvent): Promise<void> {
    return companyTransaction(this.knex, companyId, (trx) => enqueueEvents(trx, [event]))
  }

  async useOnce<T>(
    companyId: number,
    use: LinkUse,
    act: () => Promise<{ keep: boolean; value: T }>,
  ): Promise<{ used: LinkAction } | { value: T }> {
    try {
      return await companyTransaction(this.knex, companyId, async (trx) => {
        const inserted = await trx(TABLE)
          .insert({
            idempresa: companyId,
            token_id: use.tokenId,
            appointment_id: use.appointmentId,
            action: use.action,
          })
          .onConflict(['idempresa', 'token_id'])
          .ignore()
          .returning('action')
        if (!inserted.length) {
          // A new statement: it sees the use that made this insert wait, now committed.
          const [row] = await trx(TABLE)
            .where({ idempresa: companyId, token_id: use.tokenId })
            .select<Array<{ action: LinkAction }>>('action')
          return { used: row?.action ?? use.action }
        }
        const { keep, value } = await act()
        if (!keep) throw new Undo(value)
        return { value }
      })
    } catch (err) {
      if (err instanceof Undo) return { value: err.value as T }
      throw err
    }
  }
}
