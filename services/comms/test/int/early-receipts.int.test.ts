import { randomBytes } from 'node:crypto'
import type { Knex } from 'knex'
import { companyTransaction, createDb, migrate } from '@clinic/platform'
import { testPrincipal } from '@clinic/platform/testing'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'

/**
 * early_receipts is a tenant table like the others: the service's role sees one company's receipts
 * at a time; apply_receipt (which no company names) keeps an early receipt under each company with
 * an SMS being sent, and the worker's apply_early_receipt takes its own company's copy alone.
 */
let app: Knex
let owner: Knex

beforeAll(async () => {
  await migrate(process.env.DATABASE_URL!, SCHEMA, migrations)
  app = createDb(process.env.DATABASE_URL!, { schema: SCHEMA, role: APP_ROLE, poolMax: 2 })
  owner = createDb(process.env.DATABASE_URL!, { schema: SCHEMA, poolMax: 2 })
})
afterAll(async () => {
  await app?.destroy()
  await owner?.destroy()
})

const company = () => testPrincipal().companyId
const newSid = () => `SM${randomBytes(16).toString('hex')}`
const policy = async (table: string) =>
  (
    await owner.raw<{ rows: Array<{ policyname: string; cmd: string; qual: string; with_check: string }> }>(
      `SELECT policyname, cmd, qual, with_check FROM pg_policies WHERE schemaname = ? AND tablename = ?`,
      [SCHEMA, table],
    )
  ).rows

/** An SMS of `companyId` as the worker leaves it while Twilio is being called. */
async function sendingSms(companyId: number) {
  const id = `0190c5a0-0000-7000-8000-${randomBytes(6).toString('hex')}`
  await owner('messages').insert({
    idempresa: companyId,
    id,
    patient_id: '0190c5a0-0000-7000-8000-0000000f0002',
    channel: 'sms',
    recipient_role: 'patient',
    recipient_name: 'Testa',
    recipient_address: '+34600000126',
    body: 'x',
    status: 'sending',
    claimed_at: owner.raw('now()'),
  })
  return id
}

const receiptsOf = (sid: string) =>
  owner('early_receipts').where({ sid }).orderBy('idempresa').pluck('idempresa') as Promise<number[]>

describe('early_receipts', () => {
  it('is under row-level security, forced, with the policy the landed tables have', async () => {
    const { rows } = await owner.raw<{
      rows: Array<{ relrowsecurity: boolean; relforcerowsecurity: boolean }>
    }>(
      `SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = 'comms.early_receipts'::regclass`,
    )
    expect(rows).toEqual([{ relrowsecurity: true, relforcerowsecurity: true }])
    const made = await policy('early_receipts')
    expect(made).toHaveLength(1)
    expect(made).toEqual(await policy('messages'))
  })

  it("shows the service's role its company's receipts only", async () => {
    const [a, b] = [company(), company()]
    const sid = newSid()
    await owner('early_receipts').insert([
      { idempresa: a, sid, status: 'delivered' },
      { idempresa: b, sid, status: 'delivered' },
    ])
    const seen = (c: number) =>
      companyTransaction(app, c, async (trx) => trx('early_receipts').where({ sid }).pluck('idempresa'))
    await expect(seen(a)).resolves.toEqual([a])
    await expect(seen(b)).resolves.toEqual([b])
    expect(await app('early_receipts').where({ sid })).toEqual([]) // no company set
    await companyTransaction(app, a, (trx) => trx('early_receipts').where({ sid }).delete())
    expect(await receiptsOf(sid)).toEqual([b])
  })

  it('keeps an early receipt under each company with an SMS being sent; the worker takes its own', async () => {
    const [a, b, idle] = [company(), company(), company()].sort((x, y) => x - y)
    const ofA = await sendingSms(a!)
    await sendingSms(b!)
    const sid = newSid()
    const { rows: applied } = await app.raw('SELECT * FROM apply_receipt(?, ?, ?)', [sid, 'delivered', null])
    expect(applied).toEqual([])
    const kept = await receiptsOf(sid)
    expect(kept).toEqual(expect.arrayContaining([a, b]))
    expect(kept).not.toContain(idle)

    // Another company's worker, whose message does not carry the sid, takes nothing.
    await companyTransaction(app, b!, async (trx) => {
      expect((await trx.raw('SELECT * FROM apply_early_receipt(?)', [sid])).rows).toEqual([])
    })
    // a's worker records the sid and takes a's copy: its message is delivered.
    const taken = await companyTransaction(app, a!, async (trx) => {
      await trx('messages').where({ idempresa: a, id: ofA }).update({ status: 'sent', provider_id: sid })
      return (await trx.raw('SELECT idempresa, id, status FROM apply_early_receipt(?)', [sid])).rows
    })
    expect(taken).toEqual([{ idempresa: a, id: ofA, status: 'delivered' }])
    const left = await receiptsOf(sid)
    expect(left).toContain(b)
    expect(left).not.toContain(a)
  })
})
