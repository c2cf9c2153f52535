import { createLogger, unpackAccessBatch, type CloudEvent } from '@clinic/platform'
import { testPrincipal, waitFor } from '@clinic/platform/testing'
import { AccessLog } from '../../src/access-log'
import { infra } from './harness'

let env: Awaited<ReturnType<typeof infra>>
beforeAll(async () => {
  env = await infra()
})
afterAll(() => env?.close())

describe('access log', () => {
  it('writes the events of a group commit as one http.batch row: the first alone, those recorded meanwhile together', async () => {
    const accessLog = new AccessLog(env.knex, createLogger({ service: 'gateway-test', level: 'silent' }), {
      retryMs: 60_000,
    })
    const principal = testPrincipal()
    try {
      // Recorded in one go: the first starts a write, the other 19 wait for it and go in the next.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          accessLog.record({
            method: 'GET',
            path: `/api/patients/${i}`,
            status: 200,
            durationMs: 1,
            ip: '127.0.0.1',
            requestId: `req-group-${principal.companyId}-${i}`,
            principal,
            codalmacen: null,
          }),
        ),
      )
      const mine = (await env.knex('outbox').where({ type: 'http.batch' }).orderBy('id'))
        .map((r) => unpackAccessBatch(r.payload as CloudEvent))
        .filter((events) => events.some((e) => e.idempresa === principal.companyId))
      expect(mine.map((events) => events.length)).toEqual([1, 19])
      expect(mine.flat().map((e) => e.requestid)).toEqual(
        Array.from({ length: 20 }, (_, i) => `req-group-${principal.companyId}-${i}`),
      )
    } finally {
      await accessLog.close()
    }
  })

  it('logs a failing outbox insert without the values it bound', async () => {
    const lines: string[] = []
    const log = createLogger({
      service: 'gateway-test',
      destination: { write: (l: string) => void lines.push(l) },
    })
    const accessLog = new AccessLog(env.knex, log, { retryMs: 60_000 })
    // An insert that fails with a message quoting what it was given, as PostgreSQL's do (`value
    // "98765432109" is out of range for type integer`): here a trigger of this test's.
    await env.knex.raw(`
      CREATE FUNCTION refuse_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          -- This test's events only: the outbox is shared with the other files of the run.
          IF NEW.payload::text LIKE '%req-access-log-error%' THEN
            RAISE EXCEPTION 'refused %', NEW.payload USING ERRCODE = '22003';
          END IF;
          RETURN NEW;
        END $$;
      CREATE TRIGGER refuse_outbox BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION refuse_outbox()`)
    try {
      const principal = testPrincipal({ companyId: 98_765_432_109 })
      await accessLog.record({
        method: 'GET',
        path: '/api/patients',
        status: 200,
        durationMs: 1,
        ip: '127.0.0.1',
        requestId: 'req-access-log-error',
        principal,
        codalmacen: null,
      })
      const line = await waitFor(() => lines.find((l) => l.includes('access log write failed')), {
        what: 'the write failure to be logged',
      })
      expect(JSON.parse(line)).toMatchObject({
        level: 40,
        pending: 1,
        err: { code: '22003', message: 'database error 22003' },
      })
      expect(line).not.toContain('98765432109')
      expect(line).not.toMatch(/insert into/i)
    } finally {
      await env.knex.raw('DROP TRIGGER refuse_outbox ON outbox; DROP FUNCTION refuse_outbox()')
      await accessLog.close()
    }
  })
})
