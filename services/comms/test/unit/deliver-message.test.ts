import { Writable } from 'node:stream'
import pino from 'pino'
import type { CloudEvent, Ctx } from '@clinic/platform/core'
import { deliverMessage, type DeliveryStore, type Provider } from '../../src/domain/deliver-message'
import type { Message } from '../../src/schemas/message'
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
  const store: DeliveryStore = {
    claim: async () => message(),
    requeue: async () => undefined,
    finish: async () => finish,
    applyEarlyReceipt: async () => receipt,
    publish: async (events) => void published.push(...events),
  }
  return { store, published }
}

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
    const outcome = await deliverMessage(
      ctxOf(log),
      { store, providers: { email: accepting, sms: accepting }, maxAttempts: 3 },
      { id: message().id },
    )
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
      ctxOf(log, 'u-1'),
      { store, providers: { email: accepting, sms: accepting }, maxAttempts: 3 },
      { id: sent.id },
    )
    expect(outcome).toBe('sent')
    expect(published.map((e) => [e.type, (e.data as { status: string }).status, e.actorid])).toEqual([
      ['comms.message.sent', 'sent', 'u-1'],
      ['comms.message.delivered', 'undelivered', undefined],
    ])
  })
})
