import { mkdir, open } from 'node:fs/promises'
import { dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { checkpointOf, highestHead, parseCheckpointLine, type CheckpointedHead } from '../domain/checkpoint'

/**
 * AUDIT_CHECKPOINT_FILE: one signed checkpoint per line, only ever appended to. Each line is
 * written whole by one write(2) on a descriptor opened O_APPEND, then fsync'ed, so several
 * replicas may append to one file; a torn line (a crash mid-write) fails its signature and is
 * reported and skipped by the reader.
 */
export async function appendCheckpoint(file: string, line: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true })
  const fh = await open(file, 'a', 0o640)
  try {
    const bytes = Buffer.from(`${line}\n`)
    let written = 0
    while (written < bytes.length) written += (await fh.write(bytes, written)).bytesWritten
    await fh.sync()
  } finally {
    await fh.close()
  }
}

export interface CompanyCheckpoints {
  /** false: there is no such file. */
  exists: boolean
  /** Lines whose signature verified and that hold this database's heads. */
  valid: number
  /** The company's highest head over those lines; undefined when none names it. */
  head?: CheckpointedHead
  /** Lines whose signature verified but that name another database: never held against this one. */
  others: { lines: number; databases: string[] }
  /** Lines refused (bad signature, torn, not a checkpoint): never trusted. */
  refused: Array<{ line: number; reason: string }>
}

/** Other databases' identities named in a report; more are counted. */
const OTHER_DATABASES_KEPT = 5

/**
 * Reads every line of the file and keeps, of those whose signature verifies under `chainKey` and
 * that hold database `db`'s heads, the company's highest head: heads only move forward, so a later
 * checkpoint naming a lower head (one written after a cut) never hides the cut. Lines of other
 * databases (the file outlived a database, or two share it) are counted, never held against this one.
 */
export async function readCompanyCheckpoints(
  file: string,
  chainKey: string,
  companyId: number,
  db: string,
): Promise<CompanyCheckpoints> {
  const out: CompanyCheckpoints = { exists: true, valid: 0, refused: [], others: { lines: 0, databases: [] } }
  let fh
  try {
    fh = await open(file, 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ...out, exists: false }
    throw err
  }
  const input = fh.createReadStream({ encoding: 'utf8' })
  try {
    let n = 0
    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      n++
      const line = raw.trim()
      if (line === '') continue
      const parsed = parseCheckpointLine(line, chainKey)
      if (!parsed.ok) {
        out.refused.push({ line: n, reason: parsed.reason })
        continue
      }
      if (!checkpointOf(parsed.checkpoint, db)) {
        const other = parsed.checkpoint.v === 2 ? parsed.checkpoint.db : ''
        out.others.lines++
        if (out.others.databases.length < OTHER_DATABASES_KEPT && !out.others.databases.includes(other))
          out.others.databases.push(other)
        continue
      }
      out.valid++
      out.head = highestHead(out.head, parsed.checkpoint, companyId)
    }
  } finally {
    input.destroy()
  }
  return out
}
