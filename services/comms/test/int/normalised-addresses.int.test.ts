import { randomUUID } from 'node:crypto'
import { createDb, migrate } from '@clinic/platform'
import { createTestDatabase, dropTestDatabase } from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { SCHEMA, migrations } from '../../src/db/migrations'

/**
 * Migration 0007 on rows written before it, in a database of its own: the emails stored in another
 * case become the one form the hourly limit, consent and keyword lookups now read.
 */
let url: string
let owner: Knex
beforeAll(async () => {
  url = await createTestDatabase()
  const before = migrations.findIndex((m) => m.name.startsWith('0007_'))
  expect(before).toBeGreaterThan(0)
  await migrate(url, SCHEMA, migrations.slice(0, before))
  owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
})
afterAll(async () => {
  await owner?.destroy()
  if (url) await dropTestDatabase(url)
})

const message = (idempresa: number, channel: 'email' | 'sms', recipient_address: string) => ({
  idempresa,
  id: randomUUID(),
  patient_id: randomUUID(),
  channel,
  recipient_role: 'patient',
  recipient_name: 'Testa Ficticia',
  recipient_address,
  body: 'x',
})

test('lower-cases stored emails; two preferences that become one keep the later decision', async () => {
  await owner('messages').insert([
    message(1, 'email', 'Quota@Example.TEST'),
    message(1, 'email', 'quota@example.test'),
    message(2, 'sms', '+34600111222'),
  ])
  await owner('preferences').insert([
    // Company 1: the same mailbox twice; the later (an opt-out) wins.
    {
      idempresa: 1,
      channel: 'email',
      address: 'Ana@Example.TEST',
      opted_out: false,
      source: 'api',
      updated_at: '2026-01-01T00:00:00Z',
    },
    {
      idempresa: 1,
      channel: 'email',
      address: 'ana@example.test',
      opted_out: true,
      source: 'email_unsubscribe',
      updated_at: '2026-02-01T00:00:00Z',
    },
    // Company 2: the mixed-case row is the later one.
    {
      idempresa: 2,
      channel: 'email',
      address: 'ana@example.test',
      opted_out: true,
      source: 'api',
      updated_at: '2026-01-01T00:00:00Z',
    },
    {
      idempresa: 2,
      channel: 'email',
      address: 'ANA@example.test',
      opted_out: false,
      source: 'api',
      updated_at: '2026-03-01T00:00:00Z',
    },
    {
      idempresa: 3,
      channel: 'email',
      address: 'Solo@Example.TEST',
      opted_out: true,
      source: 'api',
      updated_at: '2026-01-01T00:00:00Z',
    },
  ])
  await migrate(url, SCHEMA, migrations)

  expect(
    (await owner('messages').orderBy(['idempresa', 'recipient_address']).select('recipient_address')).map(
      (r) => r.recipient_address,
    ),
  ).toEqual(['quota@example.test', 'quota@example.test', '+34600111222'])
  expect(
    await owner('preferences').orderBy('idempresa').select('idempresa', 'address', 'opted_out', 'source'),
  ).toEqual([
    { idempresa: 1, address: 'ana@example.test', opted_out: true, source: 'email_unsubscribe' },
    { idempresa: 2, address: 'ana@example.test', opted_out: false, source: 'api' },
    { idempresa: 3, address: 'solo@example.test', opted_out: true, source: 'api' },
  ])
  // Row-level security is forced again afterwards.
  const forced = await owner.raw(
    `SELECT relname, relforcerowsecurity FROM pg_class WHERE relnamespace = ?::regnamespace AND relname IN ('messages', 'preferences') ORDER BY relname`,
    [SCHEMA],
  )
  expect(forced.rows).toEqual([
    { relname: 'messages', relforcerowsecurity: true },
    { relname: 'preferences', relforcerowsecurity: true },
  ])
})
