import { resolve } from 'node:path'
import type { Logger } from 'pino'
import { checkpointLine, lineDigest, type ChainHeadSource, type CheckpointHead } from '../domain/checkpoint'
import { appendCheckpoint } from './checkpoint-file'

export interface Checkpointer {
  /**
   * Reads every head and appends one signed line: all of them (`full`), or those that moved since
   * this instance's previous line (nothing is written when none did). What each tick does.
   */
  write(full?: boolean): Promise<void>
  /** Stops the timer, lets a write under way finish, then writes one last full checkpoint. */
  stop(): Promise<void>
}

/** Most company ids one log line names. */
const LOGGED_IDS = 100

/**
 * Checkpoints of the chain heads in `file`: every head at start and on stop (shutdown), and every
 * `intervalMs` the heads that moved since (verification holds a chain against the highest head
 * any line names, so a line need not repeat the others). Each line written gets a log line
 * (`audit checkpoint`: the file, how many companies, the line's SHA-256; no patient data). A head
 * found behind the one this instance saw last (a cut tail) is logged as an error at once.
 * The first write is awaited, so a file that cannot be written stops the service from starting;
 * a failed tick later is logged and the next one tries again; ticks do not overlap. Replicas each
 * append their own lines: every line is whole and signed on its own.
 */
export async function startCheckpoints(o: {
  heads: ChainHeadSource
  log: Logger
  file: string
  intervalMs: number
  chainKey: string
  now?: () => Date
}): Promise<Checkpointer> {
  const file = resolve(o.file)
  const now = o.now ?? (() => new Date())
  let seen = new Map<number, CheckpointHead>()
  let seenDb: string | undefined

  const write = async (full = false) => {
    const at = now()
    const heads = await o.heads.all()
    // Read at every line: a database swapped under a running service is named as what it is, gets
    // a full line, and its heads are not compared with the other database's.
    const db = await o.heads.database()
    if (db !== seenDb) {
      if (seenDb !== undefined) o.log.warn({ file, db, was: seenDb }, 'audit checkpoints: another database')
      seen = new Map()
      full = true
    }
    const current = new Map(heads.map((h) => [h.idempresa, h]))
    const back = [...seen.values()]
      .filter((p) => {
        const h = current.get(p.idempresa)
        return !h || h.seq < p.seq || (h.seq === p.seq && h.hash !== p.hash)
      })
      .map((p) => p.idempresa)
    if (back.length)
      o.log.error(
        { file, count: back.length, companies: back.slice(0, LOGGED_IDS) },
        'audit chain heads moved back since the last checkpoint',
      )
    const moved = full
      ? heads
      : heads.filter((h) => seen.get(h.idempresa)?.seq !== h.seq || seen.get(h.idempresa)?.hash !== h.hash)
    if (full || moved.length) {
      const line = checkpointLine(at, moved, o.chainKey, db)
      await appendCheckpoint(file, line)
      o.log.info(
        { file, at: at.toISOString(), db, full, companies: moved.length, digest: lineDigest(line) },
        'audit checkpoint',
      )
    }
    // Only once written: heads a failed write left out go into the next line.
    seen = current
    seenDb = db
  }

  let running: Promise<void> | null = null
  const tick = () => {
    if (running) return
    running = write()
      .catch((err: unknown) => o.log.error({ err, file }, 'audit checkpoint failed'))
      .finally(() => (running = null))
  }
  await write(true)
  const timer = setInterval(tick, o.intervalMs)
  timer.unref()
  return {
    write,
    async stop() {
      clearInterval(timer)
      await running
      await write(true)
    },
  }
}
