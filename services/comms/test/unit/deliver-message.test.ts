import { Writable } from 'node:stream'
import pino from 'pino'
import type { CloudEvent, Ctx } from '@clinic/platform/core'
import {
  DeliveryError,
  deliverMessage,
  type DeliveryStore,
  type Provider,
} from '../../src/domain/deliver-message'
import type { Message } from '../../src/schemas/message'
import { withRetries } from '../../src/worker'
import { claimedMessage } from '../fixtures'

/** A pino logger whose lines (parsed) land in `lines`. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>)
      done()
    },
  })
  return { log: pino({ level: 'trace' }, stream), lines }
}

const message = claimedMessage

function fakeStore(finish: Message | null, receipt: Message | null = null) {
  const published: CloudEvent[] = []
  const rescheduled: Array<{ id: string; attempt: number; error: string; retryAt: Date }> = []
  const store: DeliveryStore = {
    claim: async () => [message()],
    reschedule: async (_companyId, id, attempt, error, retryAt) => {
      rescheduled.push({ id, attempt, error, retryAt })
      return true
    },
    transaction: (_companyId, work) =>
      work({
        finish: async () => finish,
        applyEarlyReceipt: async () => receipt,
        publish: async (events) => void published.push(...events),
      }),
    failStale: async () => [],
  }
  return { store, published, rescheduled }
}

const NOW = new Date('2026-03-01T10:00:00.000Z')
const depsOf = (store: DeliveryStore, provider: Provider) => ({
  store,
  providers: { email: provider, sms: provider },
  maxAttempts: 3,
  retryBaseMs: 1000,
  clock: () => NOW,
  random: () => 1,
})

/** The ctx a consumer gets of a queued event (ctxFromEvent): company 7, who queued it if known. */
const ctxOf = (log: Ctx['log'], actorid = ''): Ctx => ({
  auth: {
    companyId: 7,
    userId: actorid,
    username: '',
    tokenId: '',
    companyCenters: [],
    allowedCenters: null,
  },
  log,
  requestId: '',
})

const accepting: Provider = { send: async () => ({ providerId: 'SM0001' }) }

describe('deliverMessage', () => {
  it('the provider accepted but the row had left sending (swept): no event, no "sent" in the log', async () => {
    const { store, published } = fakeStore(null)
    const { log, lines } = capturingLogger()
    const outcome = await deliverMessage(ctxOf(log), depsOf(store, accepting), message())
    expect(outcome).toBe('skipped')
    expect(published).toEqual([])
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/\bsent\b/)
  })

  it('an SMS receipt that came before the sid was recorded is applied with it: sent, then delivered', async () => {
    const sent = message({ channel: 'sms', status: 'sent', provider_id: 'SM0001' })
    const { store, published } = fakeStore(sent, { ...sent, status: 'undelivered' })
    const { log } = capturingLogger()
    const outcome = await deliverMessage(
      ctxOf(log),
      depsOf(store, accepting),
      message({ channel: 'sms', cause: { actorid: 'u-1' } }),
    )
    expect(outcome).toBe('sent')
    expect(published.map((e) => [e.type, (e.data as { status: string }).status, e.actorid])).toEqual([
      ['comms.message.sent', 'sent', 'u-1'],
      ['comms.message.delivered', 'undelivered', undefined],
    ])
  })

  it('a transient failure puts the message back, due after its backoff by the clock; the last one fails it', async () => {
    const { store, published, rescheduled } = fakeStore(message({ status: 'failed' }))
    const busy: Provider = {
      send: async () => {
        throw new DeliveryError(false, 'smtp 451 (RCPT)')
      },
    }
    const { log } = capturingLogger()
    expect(await deliverMessage(ctxOf(log), depsOf(store, busy), message({ attempts: 2 }))).toBe('retry')
    // retryDelay(1000, 2) with the most jitter: 2 s after the clock's now.
    expect(rescheduled).toEqual([
      { id: message().id, attempt: 2, error: 'smtp 451 (RCPT)', retryAt: new Date(NOW.getTime() + 2000) },
    ])
    expect(published).toEqual([])
    expect(await deliverMessage(ctxOf(log), depsOf(store, busy), message({ attempts: 3 }))).toBe('failed')
    expect(rescheduled).toHaveLength(1)
    expect(published.map((e) => e.type)).toEqual(['comms.message.failed'])
  })
})

describe('withRetries', () => {
  const refused = () =>
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

  it('writes an outcome again while the database is away, without sending again', async () => {
    const { store, published } = fakeStore(message({ status: 'sent', provider_id: 'SM0001' }))
    let refusals = 2
    const flaky: DeliveryStore = {
      ...store,
      transaction: (companyId, work) => {
        if (refusals-- > 0) return Promise.reject(refused())
        return store.transaction(companyId, work)
      },
    }
    let sends = 0
    const counting: Provider = {
      send: async () => {
        sends++
        return { providerId: 'SM0001' }
      },
    }
    const { log } = capturingLogger()
    const retried = withRetries(flaky, { until: Date.now() + 60_000, log })
    expect(await deliverMessage(ctxOf(log), depsOf(retried, counting), message())).toBe('sent')
    expect([sends, refusals, published.length]).toEqual([1, -1, 1])
  })

  it('gives up at its deadline, and never retries an error that is not the connection', async () => {
    const { store } = fakeStore(null)
    const { log } = capturingLogger()
    const away = withRetries({ ...store, reschedule: () => Promise.reject(refused()) }, { until: 0, log })
    await expect(away.reschedule(7, 'x', 1, 'e', NOW)).rejects.toThrow('ECONNREFUSED')
    let calls = 0
    const broken = withRetries(
      {
        ...store,
        reschedule: () => {
          calls++
          return Promise.reject(new Error('a bug'))
        },
      },
      { until: Date.now() + 60_000, log },
    )
    await expect(broken.reschedule(7, 'x', 1, 'e', NOW)).rejects.toThrow('a bug')
    expect(calls).toBe(1)
  })
})
