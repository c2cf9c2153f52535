import type { Principal } from '@clinic/platform'
import type { ExportLevel } from './kickoff'

/** A file being filled: its number, its lines and chunks so far. */
export interface OpenFile {
  seq: number
  lines: number
  chunks: number
}

/**
 * Where an export stands, written with each page it keeps (one transaction): the type reached, that
 * type's next page, the file each kind of line goes to. `settled`: every transaction that began
 * before transactionTime has ended, so reading up to it sees all it will ever hold.
 */
export interface ExportPosition {
  settled: boolean
  /** The snapshot the pages so far were read in (pg_export_snapshot's id); null before it is taken. */
  snapshot: string | null
  type: number
  cursor: string | null
  /** `${kind}:${type}` -> the file its next lines go to. */
  open: Record<string, OpenFile>
  nextSeq: number
}

export type FileKind = 'output' | 'deleted' | 'error'

export interface ExportJob {
  id: string
  idempresa: number
  status: 'in-progress' | 'completed' | 'failed'
  level: ExportLevel
  group_id: string | null
  since: Date | null
  types: string[]
  request: string
  /** The absolute FHIR base the kick-off reached (its files' and resources' URLs are under it). */
  base: string
  principal: Principal
  request_id: string
  traceparent: string | null
  transaction_time: Date
  position: ExportPosition
  checkpoint: number
  exported: string
  /** Runs in a row that failed (a page not read, the database away); a page written resets it. */
  failures: number
  error: string | null
  created_at: Date
  completed_at: Date | null
}

export interface ExportFile {
  seq: number
  kind: FileKind
  type: string
  count: number
}

/** Lines of one kind and type a page adds. */
export interface ExportLines {
  kind: FileKind
  type: string
  lines: string[]
}

export const START: ExportPosition = {
  settled: false,
  snapshot: null,
  type: 0,
  cursor: null,
  open: {},
  nextSeq: 1,
}
/** At most this many lines a file (DESIGN.md section 19). */
export const FILE_LINES = 100_000

/** A kick-off's export as the store keeps it. */
export interface NewExport {
  id: string
  companyId: number
  level: ExportLevel
  groupId: string | null
  since: Date | null
  types: string[]
  request: string
  base: string
  principal: Principal
  requestId: string
  traceparent: string | null
}

/**
 * Where exports and their files are kept (db/export-repository.ts): the jobs, claimed with a lease
 * as every job, and each page's lines written with the job's position in one transaction.
 */
export interface ExportStore {
  /** A new export (transactionTime: the database's clock), or the company's running one. */
  create(job: NewExport): Promise<{ created: true } | { created: false; running: string | null }>
  find(companyId: number, id: string): Promise<ExportJob | null>
  /** Removes an export and its files; whether there was one. */
  remove(companyId: number, id: string): Promise<boolean>
  claim(me: string, limit: number, running: readonly string[]): Promise<ExportJob[]>
  /** A page's lines and the job's next position, if the job is still `me`'s: the position, or null. */
  checkpoint(
    job: ExportJob,
    me: string,
    next: Omit<ExportPosition, 'open' | 'nextSeq'>,
    writes: ExportLines[],
  ): Promise<ExportPosition | null>
  finish(job: ExportJob, me: string, error?: string | null): Promise<boolean>
  release(job: ExportJob, me: string, afterMs: number): Promise<void>
  /**
   * A run that failed with `reason`, if the job is still `me`'s: given back for later (`retryMs`
   * doubled with each failure in a row, at most a minute), or, at the `limit`-th failure in a row,
   * ended as failed with `reason`. Which, or null (not `me`'s any more).
   */
  failedRun(
    job: ExportJob,
    me: string,
    reason: string,
    o: { limit: number; retryMs: number },
  ): Promise<'retried' | 'failed' | null>
  files(id: string): Promise<ExportFile[]>
  chunks(id: string, seq: number): AsyncGenerator<Buffer>
  purge(before: Date): Promise<number>
  /** Whether every transaction begun before `until` has ended (and the clock is past it), snapshots aside. */
  settled(until: Date): Promise<boolean>
  /**
   * Starts the export again from nothing (its files removed, a new transactionTime), if it is still
   * `me`'s: a run that has lost the snapshot its pages were read in.
   */
  restart(job: ExportJob, me: string): Promise<boolean>
  /** A snapshot of the whole database held open (on a connection of its own) until released. */
  holdSnapshot(): Promise<HeldSnapshot>
  /** The export's pages are read in `snapshot`, as of `transactionTime`, if the job is still `me`'s. */
  begin(job: ExportJob, me: string, snapshot: HeldSnapshot): Promise<boolean>
}

/** An exported PostgreSQL snapshot (pg_export_snapshot) and the transaction that keeps it alive. */
export interface HeldSnapshot {
  id: string
  /** The export's transactionTime: every row updated at or before it (to the millisecond) is in the snapshot. */
  at: Date
  /** False once its connection has failed (the database restarted): the snapshot is gone. */
  alive(): boolean
  release(): Promise<void>
}
