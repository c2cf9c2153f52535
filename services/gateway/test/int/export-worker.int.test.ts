import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Knex } from 'knex'
import { freshCompanyId, testPrincipal, testSigner, waitFor } from '@clinic/platform/testing'
import { ExportRepository } from '../../src/db/export-repository'
import { identityRepository } from '../../src/db/identity-repository'
import { ExportWorker } from '../../src/export/export-worker'
import { infra, logger, upstreamsTo } from './harness'

/**
 * The Bulk Data export's job (DESIGN.md section 19, "Failures") against a stand-in patients
 * service whose answers each test sets: what is tried again, what starts the export again in a new
 * snapshot, what is an error line, and an export that fails after EXPORT_MAX_FAILURES runs in a
 * row instead of being retried forever.
 */
let db: Awaited<ReturnType<typeof infra>>
let knex: Knex
let service: FastifyInstance
let worker: ExportWorker
/** The stand-in's next answers to a Patient search (then a page of one patient). */
let answers: Array<{ status: number; body: unknown }> = []
const snapshotsAsked: Array<string | undefined> = []
const MAX_FAILURES = 3

beforeAll(async () => {
  db = await infra()
  knex = db.knex
  service = Fastify()
  service.get('/fhir/R4/Patient', async (req, reply) => {
    snapshotsAsked.push(req.headers['x-clinic-fhir-snapshot'] as string | undefined)
    const next = answers.shift()
    if (next) return reply.code(next.status).send(next.body)
    return {
      resourceType: 'Bundle',
      type: 'searchset',
      entry: [
        { resource: { resourceType: 'Patient', id: 'p1', meta: { lastUpdated: '2026-01-01T00:00:00Z' } } },
      ],
    }
  })
  await service.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`
  worker = new ExportWorker({
    knex,
    store: new ExportRepository(knex, 15),
    upstream: { upstreams: upstreamsTo(url), signer: testSigner() },
    log: logger,
    clock: () => new Date(),
    retentionHours: 24,
    pageSize: 100,
    pollMs: 20,
    maxFailures: MAX_FAILURES,
    retryMs: 20,
  })
  worker.start()
})
afterAll(async () => {
  await worker.stop()
  await service.close()
  await db.close()
})

/** A company's Patient export, kicked off as the route does; the row once it is no longer running. */
async function exportOnce() {
  const companyId = freshCompanyId()
  await identityRepository(knex).createCompany(companyId, `Export ${companyId}`)
  const id = randomUUID()
  const created = await new ExportRepository(knex).create({
    id,
    companyId,
    level: 'system',
    groupId: null,
    since: null,
    types: ['Patient'],
    request: 'http://gateway.test/api/fhir/R4/$export?_type=Patient',
    base: 'http://gateway.test/api/fhir/R4',
    principal: testPrincipal({ companyId }),
    requestId: randomUUID(),
    traceparent: null,
  })
  expect(created).toEqual({ created: true })
  worker.wake()
  const row = await waitFor(
    async () => {
      const r = await knex('fhir_exports').where({ id }).first()
      return r.status === 'in-progress' ? null : r
    },
    { timeoutMs: 20_000, what: `export ${id} to end` },
  )
  const files = await knex('fhir_export_files').where({ export_id: id }).orderBy('seq')
  return {
    status: row.status as string,
    error: row.error as string | null,
    failures: row.failures as number,
    exported: Number(row.exported),
    files: files.map((f) => ({ kind: f.kind as string, type: f.type as string, count: f.count as number })),
  }
}

/** A completed export of the stand-in's one patient. */
const onePatient = {
  status: 'completed',
  error: null,
  failures: 0,
  exported: 1,
  files: [{ kind: 'output', type: 'Patient', count: 1 }],
}

test('an answer that may pass (503, 429, 401, 408) is asked again, and the export completes with nothing lost', async () => {
  // Fewer failures in a row than the limit each time; a page written resets the count.
  for (const statuses of [
    [503, 429],
    [401, 408],
  ]) {
    answers = statuses.map((status) => ({ status, body: { code: 'busy' } }))
    expect(await exportOnce()).toEqual(onePatient)
    expect(answers).toEqual([])
  }
})

test("a service that lost the export's snapshot (409 fhir_snapshot_gone): a new snapshot, no error line", async () => {
  snapshotsAsked.length = 0
  answers = [{ status: 409, body: { code: 'fhir_snapshot_gone' } }]
  expect(await exportOnce()).toEqual(onePatient)
  expect(snapshotsAsked).toHaveLength(2)
  expect(new Set(snapshotsAsked).size).toBe(2)
})

test('an answer about the request itself (400) is an error line of the manifest, not retried', async () => {
  answers = [{ status: 400, body: { resourceType: 'OperationOutcome', issue: [] } }]
  expect(await exportOnce()).toEqual({
    status: 'completed',
    error: null,
    failures: 0,
    exported: 0,
    files: [{ kind: 'error', type: 'OperationOutcome', count: 1 }],
  })
})

test(`a service that never answers: the export fails after ${MAX_FAILURES} runs in a row, with the reason`, async () => {
  answers = Array.from({ length: MAX_FAILURES }, () => ({ status: 503, body: { code: 'down' } }))
  expect(await exportOnce()).toEqual({
    status: 'failed',
    error: 'Patient: the service answered 503',
    failures: MAX_FAILURES,
    exported: 0,
    files: [],
  })
  expect(answers).toEqual([])
})
