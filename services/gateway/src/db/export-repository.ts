import type { Knex } from 'knex'
import { isUniqueViolation } from '@clinic/platform'
import {
  FILE_LINES,
  START,
  type ExportFile,
  type ExportJob,
  type ExportLines,
  type ExportPosition,
  type ExportStore,
  type FileKind,
  type HeldSnapshot,
  type NewExport,
} from '../export/export-store'

import { holdSnapshot, settledBefore } from './export-snapshot'

const JOB_COLUMNS = [
  'id',
  'idempresa',
  'status',
  'level',
  'group_id',
  'since',
  'types',
  'request',
  'base',
  'principal',
  'request_id',
  'traceparent',
  'transaction_time',
  'position',
  'checkpoint',
  'exported',
  'failures',
  'error',
  'created_at',
  'completed_at',
]

/**
 * The exports and their files (identity schema, migration 0007): jobs claimed with a lease as
 * every job, each page's lines and the job's position in one transaction, guarded by the job's
 * checkpoint number (a process that lost its lease writes nothing).
 */
export class ExportRepository implements ExportStore {
  /** leaseSeconds: how long a claim holds a job without a checkpoint (a killed process's job is taken up after it). */
  constructor(
    private readonly knex: Knex,
    private readonly leaseSeconds = 15,
  ) {}

  /**
   * A new export, its transactionTime the database's clock to the millisecond; null when the
   * company has one running (its id as `running`).
   */
  async create(job: NewExport): Promise<{ created: true } | { created: false; running: string | null }> {
    try {
      await this.knex('fhir_exports').insert({
        id: job.id,
        idempresa: job.companyId,
        level: job.level,
        group_id: job.groupId,
        since: job.since,
        types: job.types,
        request: job.request,
        base: job.base,
        principal: JSON.stringify(job.principal),
        request_id: job.requestId,
        traceparent: job.traceparent,
        transaction_time: this.knex.raw(`date_trunc('milliseconds', clock_timestamp())`),
        position: JSON.stringify(START),
      })
      return { created: true }
    } catch (err) {
      if (!isUniqueViolation(err)) throw err
      const running = await this.knex('fhir_exports')
        .where({ idempresa: job.companyId, status: 'in-progress' })
        .first('id')
      return { created: false, running: (running?.id as string | undefined) ?? null }
    }
  }

  async find(companyId: number, id: string): Promise<ExportJob | null> {
    const row = await this.knex('fhir_exports').where({ idempresa: companyId, id }).first(JOB_COLUMNS)
    return (row as ExportJob | undefined) ?? null
  }

  /** Removes an export and its files (a DELETE, or retention); whether there was one. */
  async remove(companyId: number, id: string): Promise<boolean> {
    return (await this.knex('fhir_exports').where({ idempresa: companyId, id }).delete()) > 0
  }

  /** Up to `limit` due exports not in `running`, leased to `me` (an expired lease is anyone's). */
  async claim(me: string, limit: number, running: readonly string[]): Promise<ExportJob[]> {
    const { rows } = await this.knex.raw(
      `UPDATE fhir_exports SET leased_by = ?, lease_until = now() + make_interval(secs => ?)
        WHERE id IN (
          SELECT id FROM fhir_exports
           WHERE status = 'in-progress'
             AND (lease_until IS NULL OR lease_until < now() OR leased_by = ?)
             AND (not_before IS NULL OR not_before <= now())
             AND NOT (id = ANY(?::uuid[]))
           ORDER BY created_at
           LIMIT ?
           FOR UPDATE SKIP LOCKED)
        RETURNING ${JOB_COLUMNS.join(', ')}`,
      [me, this.leaseSeconds, me, [...running], limit],
    )
    return rows as ExportJob[]
  }

  /**
   * Writes a page: its lines to their files (a new file past FILE_LINES) and the job's new position,
   * in one transaction, if the job is still this process's at `checkpoint`. The position the lines
   * were put at, or null (the job was deleted or taken over: nothing written).
   */
  async checkpoint(
    job: ExportJob,
    me: string,
    next: Omit<ExportPosition, 'open' | 'nextSeq'>,
    writes: ExportLines[],
  ): Promise<ExportPosition | null> {
    const position: ExportPosition = {
      ...next,
      open: { ...job.position.open },
      nextSeq: job.position.nextSeq,
    }
    const files: Array<{ seq: number; kind: FileKind; type: string; count: number }> = []
    const chunks: Array<{ file_seq: number; chunk: number; data: Buffer }> = []
    const counts = new Map<number, number>()
    let exported = 0
    for (const w of writes) {
      const key = `${w.kind}:${w.type}`
      let at = 0
      while (at < w.lines.length) {
        let file = position.open[key]
        if (!file || file.lines >= FILE_LINES) {
          file = { seq: position.nextSeq, lines: 0, chunks: 0 }
          position.nextSeq += 1
          files.push({ seq: file.seq, kind: w.kind, type: w.type, count: 0 })
        }
        const take = w.lines.slice(at, at + FILE_LINES - file.lines)
        at += take.length
        chunks.push({ file_seq: file.seq, chunk: file.chunks, data: Buffer.from(`${take.join('\n')}\n`) })
        position.open[key] = { seq: file.seq, lines: file.lines + take.length, chunks: file.chunks + 1 }
        counts.set(file.seq, (counts.get(file.seq) ?? 0) + take.length)
        if (w.kind === 'output') exported += take.length
      }
    }
    return this.knex.transaction(async (trx) => {
      const moved = await trx('fhir_exports')
        .where({ id: job.id, checkpoint: job.checkpoint, leased_by: me, status: 'in-progress' })
        .update({
          position: JSON.stringify(position),
          checkpoint: job.checkpoint + 1,
          exported: trx.raw('exported + ?', [exported]),
          lease_until: trx.raw('now() + make_interval(secs => ?)', [this.leaseSeconds]),
          not_before: null,
          failures: 0,
        })
      if (moved === 0) return null
      if (files.length) await trx('fhir_export_files').insert(files.map((f) => ({ export_id: job.id, ...f })))
      for (const c of chunks) await trx('fhir_export_chunks').insert({ export_id: job.id, ...c })
      for (const [seq, lines] of counts)
        await trx('fhir_export_files')
          .where({ export_id: job.id, seq })
          .update({ count: trx.raw('count + ?', [lines]) })
      job.checkpoint += 1
      job.position = position
      job.exported = String(Number(job.exported) + exported)
      job.failures = 0
      return position
    })
  }

  /** Ends the job (completed, or failed with its reason) if it is still this process's. */
  async finish(job: ExportJob, me: string, error: string | null = null): Promise<boolean> {
    const n = await this.knex('fhir_exports')
      .where({ id: job.id, checkpoint: job.checkpoint, leased_by: me, status: 'in-progress' })
      .update({
        status: error ? 'failed' : 'completed',
        error,
        completed_at: this.knex.raw('now()'),
        lease_until: null,
        leased_by: null,
      })
    return n > 0
  }

  /** Gives the job back, to be claimed again no sooner than `afterMs` from now. */
  async release(job: ExportJob, me: string, afterMs: number): Promise<void> {
    await this.knex('fhir_exports')
      .where({ id: job.id, leased_by: me, status: 'in-progress' })
      .update({
        lease_until: null,
        leased_by: null,
        not_before: this.knex.raw('now() + make_interval(secs => ?)', [afterMs / 1000]),
      })
  }

  async failedRun(
    job: ExportJob,
    me: string,
    reason: string,
    o: { limit: number; retryMs: number },
  ): Promise<'retried' | 'failed' | null> {
    // In SET, `failures` is the value before this run's.
    const { rows } = await this.knex.raw<{ rows: Array<{ status: string; failures: number }> }>(
      `UPDATE fhir_exports
          SET failures = failures + 1,
              status = CASE WHEN failures + 1 >= :limit THEN 'failed' ELSE status END,
              error = CASE WHEN failures + 1 >= :limit THEN :reason ELSE error END,
              completed_at = CASE WHEN failures + 1 >= :limit THEN now() END,
              leased_by = NULL, lease_until = NULL,
              not_before = now() + make_interval(secs => least(60, :base * 2 ^ failures))
        WHERE id = :id AND leased_by = :me AND status = 'in-progress'
        RETURNING status, failures`,
      { limit: o.limit, reason, base: o.retryMs / 1000, id: job.id, me },
    )
    const [row] = rows
    if (!row) return null
    job.failures = row.failures
    return row.status === 'failed' ? 'failed' : 'retried'
  }

  async files(id: string): Promise<ExportFile[]> {
    return (await this.knex('fhir_export_files')
      .where({ export_id: id })
      .orderBy('seq')
      .select('seq', 'kind', 'type', 'count')) as ExportFile[]
  }

  /** A file's bytes chunk by chunk (one chunk in memory at a time). */
  async *chunks(id: string, seq: number): AsyncGenerator<Buffer> {
    for (let chunk = 0; ; chunk++) {
      const row = await this.knex('fhir_export_chunks')
        .where({ export_id: id, file_seq: seq, chunk })
        .first('data')
      if (!row) return
      yield row.data as Buffer
    }
  }

  /** Removes exports that ended before `before` (retention); how many. */
  async purge(before: Date): Promise<number> {
    return this.knex('fhir_exports')
      .whereNot('status', 'in-progress')
      .where('completed_at', '<', before)
      .delete()
  }

  settled(until: Date): Promise<boolean> {
    return settledBefore(this.knex, until)
  }

  async restart(job: ExportJob, me: string): Promise<boolean> {
    return this.knex.transaction(async (trx) => {
      const [row] = await trx('fhir_exports')
        .where({ id: job.id, checkpoint: job.checkpoint, leased_by: me, status: 'in-progress' })
        .update({
          position: JSON.stringify(START),
          checkpoint: job.checkpoint + 1,
          exported: 0,
          transaction_time: trx.raw(`date_trunc('milliseconds', clock_timestamp())`),
          lease_until: trx.raw('now() + make_interval(secs => ?)', [this.leaseSeconds]),
        })
        .returning(['transaction_time', 'checkpoint'])
      if (!row) return false
      await trx('fhir_export_files').where({ export_id: job.id }).delete()
      Object.assign(job, { position: START, exported: '0', ...row })
      return true
    })
  }

  async begin(job: ExportJob, me: string, snapshot: HeldSnapshot): Promise<boolean> {
    const transactionTime = snapshot.at
    const position = { ...job.position, settled: true, snapshot: snapshot.id }
    const n = await this.knex('fhir_exports')
      .where({ id: job.id, checkpoint: job.checkpoint, leased_by: me, status: 'in-progress' })
      .update({
        position: JSON.stringify(position),
        transaction_time: transactionTime,
        checkpoint: job.checkpoint + 1,
        lease_until: this.knex.raw('now() + make_interval(secs => ?)', [this.leaseSeconds]),
      })
    if (n === 0) return false
    Object.assign(job, { position, transaction_time: transactionTime, checkpoint: job.checkpoint + 1 })
    return true
  }

  holdSnapshot(): Promise<HeldSnapshot> {
    return holdSnapshot(this.knex)
  }
}
