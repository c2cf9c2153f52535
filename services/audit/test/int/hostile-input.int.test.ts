import type { Knex } from 'knex'
import { createLogger, encodeCursor, type Amqp } from '@clinic/platform'
import { gatewayHeaders, testAssertionKeys, testPrincipal } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { connectAmqp, migrateAudit, writerDb } from './setup'

const logLines: string[] = []
let knex: Knex
let amqp: Amqp
let app: Awaited<ReturnType<typeof buildApp>>

beforeAll(async () => {
  await migrateAudit()
  knex = writerDb()
  amqp = await connectAmqp()
  const logger = createLogger({
    service: 'audit',
    level: 'debug',
    destination: { write: (s: string) => void logLines.push(s) },
  })
  app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys(),
    serviceSigner: null,
  })
  await app.ready()
})
afterAll(async () => {
  await app.close()
  await amqp.close()
  await knex.destroy()
})

const principal = testPrincipal()
const get = async (url: string) =>
  app.inject({ method: 'GET', url, headers: await gatewayHeaders(principal, 'GET', url) })

const refused = async (url: string, path: string) => {
  const res = await get(url)
  expect(res.statusCode).toBe(400)
  const body = res.json() as { code: string; errors: Array<{ path: string }> }
  expect(body.code).toBe('validation_failed')
  expect(body.errors.map((e) => e.path)).toContain(path)
}

describe('GET /audit/events refuses text a database cannot take, naming the field', () => {
  test.each([
    ['username', '/audit/events?username=Nuluser%00x', '/username'],
    ['resource_id', '/audit/events?resource_id=Nulres%00', '/resource_id'],
    ['action', '/audit/events?action=patient.%00', '/action'],
    ['resource_type', '/audit/events?resource_type=pat%00ient', '/resource_type'],
  ])('%s', (_name, url, path) => refused(url, path))

  test.each([
    ['a string', ['12']],
    ['a fraction', [1.5]],
    ['zero', [0]],
    ['beyond a safe integer', [2 ** 60]],
    ['two values', [1, 2]],
    ['NUL', ['\u0000']],
  ])('a forged cursor: %s', (_name, values) =>
    refused(`/audit/events?after=${encodeCursor(values)}`, '/after'),
  )

  test('the refused values never reach the log', () => {
    const all = logLines.join('\n')
    for (const v of ['Nuluser', 'Nulres']) expect(all).not.toContain(v)
  })
})
