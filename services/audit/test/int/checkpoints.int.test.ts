import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Knex } from 'knex'
import pino from 'pino'
import { createDb, migrate } from '@clinic/platform'
import { createTestDatabase, dropTestDatabase, testPrincipal, waitFor } from '@clinic/platform/testing'
import { startCheckpoints } from '../../src/checkpoints/checkpointer'
import { run } from '../../src/cli/admin'
import { SCHEMA, WRITER_ROLE, migrations } from '../../src/db/migrations'
import { chainHeadsRepository, readDatabaseIdentity } from '../../src/db/repositories/chain-heads-repository'
import { lineDigest, parseCheckpointLine, type Checkpoint } from '../../src/domain/checkpoint'
import { domainEvent, patientData } from '../helpers'
import { chainKey, databaseUrl, migrateAudit, ownerDb, record, writerDb } from './setup'

jest.setTimeout(60_000)

let writer: Knex
let owner: Knex
let dir: string

beforeAll(async () => {
  await migrateAudit()
  writer = writerDb()
  owner = ownerDb()
  dir = await mkdtemp(path.join(tmpdir(), 'audit-checkpoints-'))
})
afterAll(async () => {
  await writer.destroy()
  await owner.destroy()
  await rm(dir, { recursive: true, force: true })
})

/** A logger whose lines the test reads. */
function capturedLog() {
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) })
  return { log, lines }
}

/**
 * Checkpoints of the writer's database (or `db`'s) into `file`, one at start, then one every
 * `intervalMs`.
 */
const checkpointsTo = (file: string, o: { log?: pino.Logger; intervalMs?: number; db?: Knex } = {}) =>
  startCheckpoints({
    heads: chainHeadsRepository(o.db ?? writer),
    log: o.log ?? capturedLog().log,
    file,
    intervalMs: o.intervalMs ?? 60_000,
    chainKey: chainKey(),
  })

const seedCompany = async (n: number) => {
  const principal = testPrincipal()
  const events = await record(
    writer,
    Array.from({ length: n }, () => domainEvent('patient.created', patientData(), { principal })),
  )
  return { principal, company: principal.companyId, events }
}

/** The file's lines, each checked: every line the writer appends is signed under the chain key. */
async function checkpointsIn(file: string): Promise<Array<{ line: string; checkpoint: Checkpoint }>> {
  const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean)
  return lines.map((line) => {
    const parsed = parseCheckpointLine(line, chainKey())
    if (!parsed.ok) throw new Error(`a line the writer wrote is refused: ${parsed.reason}`)
    return { line, checkpoint: parsed.checkpoint }
  })
}
const headIn = (c: Checkpoint, company: number) => c.heads.find((h) => h.idempresa === company)

/**
 * The admin CLI as an operator runs it, AUDIT_CHECKPOINT_FILE set to `file` (undefined: unset), on
 * the run's database or the one `DATABASE_URL` names in `env`.
 */
async function verify(company: number, file: string | undefined, ...more: string[]) {
  return verifyOn(databaseUrl(), company, file, ...more)
}
async function verifyOn(url: string, company: number, file: string | undefined, ...more: string[]) {
  let out = ''
  let err = ''
  const before = process.env.AUDIT_CHECKPOINT_FILE
  const beforeUrl = process.env.DATABASE_URL
  process.env.DATABASE_URL = url
  if (file === undefined) delete process.env.AUDIT_CHECKPOINT_FILE
  else process.env.AUDIT_CHECKPOINT_FILE = file
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk)
    return true
  })
  try {
    const code = await run(['audit:verify', '--company', String(company), ...more], {
      write: (s: string) => (err += s),
    })
    return { code, out, err }
  } finally {
    spy.mockRestore()
    process.env.DATABASE_URL = beforeUrl
    if (before === undefined) delete process.env.AUDIT_CHECKPOINT_FILE
    else process.env.AUDIT_CHECKPOINT_FILE = before
  }
}

/** What the owner can do with the triggers off: delete the last events and move the head back. */
async function cutTail(company: number, keep: { seq: number; hash: string }) {
  await owner.transaction(async (trx) => {
    await trx.raw('SET LOCAL session_replication_role = replica')
    await trx('events').where({ idempresa: company }).where('seq', '>', keep.seq).delete()
    await trx('chain_heads').where({ idempresa: company }).update({ seq: keep.seq, hash: keep.hash })
  })
}

describe('a tail cut by the database owner', () => {
  it('is reported by audit:verify against the checkpoints; without them the chain reads intact', async () => {
    const file = path.join(dir, 'cut', 'checkpoints.jsonl')
    const { company, events } = await seedCompany(5)
    const { log, lines } = capturedLog()
    const checkpoints = await checkpointsTo(file, { log })
    const [written] = await checkpointsIn(file)
    expect(headIn(written!.checkpoint, company)).toEqual({
      idempresa: company,
      seq: 5,
      hash: events[4]!.hash,
    })
    await expect(verify(company, file)).resolves.toEqual({
      code: 0,
      out: `ok: company ${company}, 5 events, chain intact\ncheckpoint of ${written!.checkpoint.at}: head at seq 5 is in the chain\n`,
      err: '',
    })

    await cutTail(company, events[2]!)

    // What audit:verify said before checkpoints: intact (the proof that the cut went unseen).
    const missing = path.join(dir, 'none.jsonl')
    await expect(verify(company, missing)).resolves.toEqual({
      code: 0,
      out: `ok: company ${company}, 3 events, chain intact\n`,
      err: `warning: no checkpoint: tail truncation cannot be detected (no ${missing})\n`,
    })
    const cut = `broken: company ${company} at seq 4 (event none): tail missing: checkpoint of ${written!.checkpoint.at} has head 5/${events[4]!.hash}, the database ends at 3\n`
    await expect(verify(company, file)).resolves.toEqual({ code: 1, out: cut, err: '' })

    // The next checkpoints name the lower head: the writer logs the move back at once, and
    // verification still holds the chain against the highest head any checkpoint named.
    await checkpoints.write()
    await checkpoints.stop()
    const all = await checkpointsIn(file)
    expect(all.length).toBeGreaterThanOrEqual(3)
    expect(headIn(all.at(-1)!.checkpoint, company)).toMatchObject({ seq: 3 })
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'audit chain heads moved back since the last checkpoint',
        companies: expect.arrayContaining([company]),
      }),
    )
    await expect(verify(company, file)).resolves.toEqual({ code: 1, out: cut, err: '' })
    // --checkpoints names the file too.
    await expect(verify(company, missing, '--checkpoints', file)).resolves.toMatchObject({
      code: 1,
      out: cut,
    })
  })

  it('a line that does not verify is reported and never trusted', async () => {
    const file = path.join(dir, 'forged.jsonl')
    const { company, events } = await seedCompany(2)
    const checkpoints = await checkpointsTo(file)
    await checkpoints.stop()
    // Someone with the file but not the key raises the company's head, and a write was torn.
    const { line } = (await checkpointsIn(file)).at(-1)!
    const forged = line.replace(`"idempresa":${company},"seq":2}`, `"idempresa":${company},"seq":9}`)
    expect(forged).not.toBe(line)
    await appendFile(file, `${forged}\n${line.slice(0, 40)}\n`)
    const lineCount = (await readFile(file, 'utf8')).split('\n').filter(Boolean).length
    await expect(verify(company, file)).resolves.toEqual({
      code: 0,
      out: expect.stringMatching(
        new RegExp(
          `^ok: company ${company}, 2 events, chain intact\\ncheckpoint of .*: head at seq 2 is in the chain\\n$`,
        ),
      ),
      err: `warning: ${file} line ${lineCount - 1}: bad signature, not trusted\nwarning: ${file} line ${lineCount}: not JSON, not trusted\n`,
    })
    expect(events).toHaveLength(2)

    // Only refused lines: said, and verification goes on without checkpoints.
    const junk = path.join(dir, 'junk.jsonl')
    await writeFile(junk, `${forged}\n`)
    const { code, err } = await verify(company, junk)
    expect(code).toBe(0)
    expect(err).toContain(`warning: no valid checkpoint in ${junk}: tail truncation cannot be detected\n`)
  })
})

describe('two databases, one checkpoint file', () => {
  // A second stack on a fresh database in the same checkout (or a database reset) writes where the
  // first wrote; the same company ids come back with other chains.
  let url: string
  let second: Knex
  beforeAll(async () => {
    url = await createTestDatabase()
    await migrate(url, SCHEMA, migrations)
    second = createDb(url, { schema: SCHEMA, role: WRITER_ROLE, poolMax: 2 })
  })
  afterAll(async () => {
    await second.destroy()
    await dropTestDatabase(url)
  })

  it('names each database apart, the same on every read', async () => {
    const [a, b] = [await readDatabaseIdentity(writer), await readDatabaseIdentity(second)]
    expect(a).toMatch(/^pg:\d+\/\d+$/)
    expect(b).toMatch(/^pg:\d+\/\d+$/)
    expect(a).not.toBe(b)
    // One cluster: the same system identifier, other databases.
    expect(a.split('/')[0]).toBe(b.split('/')[0])
    const again = writerDb(1)
    try {
      await expect(readDatabaseIdentity(again)).resolves.toBe(a)
    } finally {
      await again.destroy()
    }
  })

  it("holds each chain against its own database's checkpoints, says the others' were ignored", async () => {
    const file = path.join(dir, 'shared', 'checkpoints.jsonl')
    const principal = testPrincipal()
    const company = principal.companyId
    const patients = (n: number) =>
      Array.from({ length: n }, () => domainEvent('patient.created', patientData(), { principal }))
    const [firstDb, secondDb] = [await readDatabaseIdentity(writer), await readDatabaseIdentity(second)]

    // The first stack: five events, checkpointed at start and on stop.
    const firstEvents = await record(writer, patients(5))
    await (await checkpointsTo(file)).stop()
    const firstLines = (await checkpointsIn(file)).length

    // The second stack's untouched chain of two events, before it wrote a line: nothing to hold
    // it against, said plainly; neither "intact" nor a tail missing.
    await record(second, patients(2))
    await expect(verifyOn(url, company, file)).resolves.toEqual({
      code: 0,
      out: `ok: company ${company}, 2 events, chain unbroken; not held against any checkpoint: those in ${file} are another database's\n`,
      err:
        `note: ${firstLines} checkpoint lines in ${file} are another database's (${firstDb}), ignored: this database is ${secondDb}\n` +
        `warning: no checkpoint of this database in ${file}: tail truncation cannot be detected\n`,
    })

    // Once the second stack checkpointed too, each database holds against its own lines.
    await (await checkpointsTo(file, { db: second })).stop()
    const secondLines = (await checkpointsIn(file)).length - firstLines
    const second2 = await verifyOn(url, company, file)
    expect(second2).toEqual({
      code: 0,
      out: expect.stringMatching(
        new RegExp(
          `^ok: company ${company}, 2 events, chain intact\\ncheckpoint of .*: head at seq 2 is in the chain\\n$`,
        ),
      ),
      err: `note: ${firstLines} checkpoint lines in ${file} are another database's (${firstDb}), ignored: this database is ${secondDb}\n`,
    })
    await expect(verify(company, file)).resolves.toEqual({
      code: 0,
      out: expect.stringMatching(
        new RegExp(
          `^ok: company ${company}, 5 events, chain intact\\ncheckpoint of .*: head at seq 5 is in the chain\\n$`,
        ),
      ),
      err: `note: ${secondLines} checkpoint lines in ${file} are another database's (${secondDb}), ignored: this database is ${firstDb}\n`,
    })

    // A tail cut in the first database still shows against its own checkpoints: the second's lower
    // head for the same company hides nothing.
    await cutTail(company, firstEvents[2]!)
    await expect(verify(company, file)).resolves.toMatchObject({
      code: 1,
      out: expect.stringMatching(
        new RegExp(`^broken: company ${company} at seq 4 \\(event none\\): tail missing: .* has head 5/`),
      ),
    })
  })
})

describe('a company no checkpoint names', () => {
  it('verifies on its chain alone, with a note: its events came after the last checkpoint', async () => {
    const file = path.join(dir, 'later.jsonl')
    const checkpoints = await checkpointsTo(file)
    await checkpoints.stop()
    const { company } = await seedCompany(2)
    await expect(verify(company, file)).resolves.toEqual({
      code: 0,
      out: `ok: company ${company}, 2 events, chain intact\n`,
      err: `note: no checkpoint names company ${company} (its events came later)\n`,
    })
  })
})

describe('the checkpoint writer', () => {
  it('writes every head at start, the heads that moved at each interval, and every head on stop', async () => {
    const file = path.join(dir, 'timer.jsonl')
    const { principal, company, events } = await seedCompany(1)
    const { log, lines } = capturedLog()
    const checkpoints = await checkpointsTo(file, { log, intervalMs: 50 })
    const [first] = await checkpointsIn(file)
    expect(headIn(first!.checkpoint, company)).toMatchObject({ seq: 1, hash: events[0]!.hash })

    const [next] = await record(writer, [domainEvent('patient.created', patientData(), { principal })])
    const moved = await waitFor(
      async () => (await checkpointsIn(file)).find((c) => headIn(c.checkpoint, company)?.seq === 2),
      { what: 'a checkpoint with the moved head' },
    )
    expect(headIn(moved.checkpoint, company)).toEqual({ idempresa: company, seq: 2, hash: next!.hash })
    // Each line has its log line: the file, how many companies, the line's SHA-256. The line is
    // logged once its append has returned, so a reader of the file may see it first.
    await waitFor(() => lines.some((l) => l.digest === lineDigest(moved.line)), {
      what: 'the log line of the moved head',
    })
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'audit checkpoint',
        file,
        companies: moved.checkpoint.heads.length,
        digest: lineDigest(moved.line),
      }),
    )
    // The lines after it (other companies' heads may move meanwhile) leave the company out: its
    // head did not move again.
    await new Promise((r) => setTimeout(r, 300))
    const written = await checkpointsIn(file)
    const later = written.slice(written.findIndex((c) => c.line === moved.line) + 1)
    expect(later.filter((c) => headIn(c.checkpoint, company))).toEqual([])

    await checkpoints.stop()
    const stopped = await checkpointsIn(file)
    // The shutdown line is new and names every head, the company's unmoved one too.
    expect(written.map((c) => c.line)).not.toContain(stopped.at(-1)!.line)
    expect(headIn(stopped.at(-1)!.checkpoint, company)).toMatchObject({ seq: 2, hash: next!.hash })
    await new Promise((r) => setTimeout(r, 250))
    expect(await checkpointsIn(file)).toHaveLength(stopped.length)
  })

  it('names the database it read at each line; another one under it gets a full line, no false move back', async () => {
    const file = path.join(dir, 'swapped.jsonl')
    const source = {
      db: 'pg:1/100',
      heads: [
        { idempresa: 1, seq: 9, hash: 'h9' },
        { idempresa: 2, seq: 4, hash: 'h4' },
      ],
      all: async () => source.heads,
      database: async () => source.db,
    }
    const { log, lines } = capturedLog()
    const checkpoints = await startCheckpoints({
      heads: source,
      log,
      file,
      intervalMs: 60_000,
      chainKey: chainKey(),
    })
    // A fresh database behind the same service: lower heads, one company only.
    source.db = 'pg:1/200'
    source.heads = [{ idempresa: 1, seq: 2, hash: 'h2' }]
    await checkpoints.write()
    await checkpoints.stop()
    const written = (await checkpointsIn(file)).map((c) => c.checkpoint)
    expect(written.map((c) => (c.v === 2 ? c.db : null))).toEqual(['pg:1/100', 'pg:1/200', 'pg:1/200'])
    expect(written[1]!.heads).toEqual([{ idempresa: 1, seq: 2, hash: 'h2' }])
    expect(lines.filter((l) => l.level === 50)).toEqual([])
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'audit checkpoints: another database',
        db: 'pg:1/200',
        was: 'pg:1/100',
      }),
    )
  })

  it('refuses to start when the file cannot be written', async () => {
    const blocker = path.join(dir, 'a-file')
    await writeFile(blocker, '')
    await expect(checkpointsTo(path.join(blocker, 'checkpoints.jsonl'))).rejects.toThrow(/ENOTDIR|EEXIST/)
  })
})
