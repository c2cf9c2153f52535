import { uuidv7 } from '@clinic/platform/core'
import { companyRead, companyTransaction } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { ContentStore, ContentTx, StagedContent } from '../../domain/content-store'

/**
 * Bytes per chunk row. Fixed (but for a content's last chunk), so a byte range maps to chunk
 * numbers without reading the others: a Range request for the end of a 25 MiB image reads one or
 * two rows. 256 KiB keeps one upload's buffer, and one read's, small.
 */
export const CHUNK_BYTES = 256 * 1024

/**
 * Contents in PostgreSQL (DESIGN.md section 15): `blob_chunks` rows per upload, `blobs` naming
 * the upload that holds each sha256 of a company. Each chunk is written in its own short
 * transaction as the upload streams, so no connection is held while a slow client sends.
 */
export class ContentRepository implements ContentStore {
  constructor(private readonly knex: Knex) {}

  stage(companyId: number): StagedContent {
    const knex = this.knex
    const uploadId = uuidv7()
    let pending: Buffer[] = []
    let pendingBytes = 0
    let seq = 0
    const flush = async (bytes: Buffer) => {
      const n = seq++
      await companyTransaction(knex, companyId, (trx) =>
        trx('blob_chunks').insert({ idempresa: companyId, upload_id: uploadId, seq: n, data: bytes }),
      )
    }
    return {
      uploadId,
      async write(bytes) {
        pending.push(bytes)
        pendingBytes += bytes.length
        while (pendingBytes >= CHUNK_BYTES) {
          const all = Buffer.concat(pending)
          const chunk = all.subarray(0, CHUNK_BYTES)
          const rest = all.subarray(CHUNK_BYTES)
          pending = rest.length ? [Buffer.from(rest)] : []
          pendingBytes = rest.length
          await flush(chunk)
        }
      },
      async finish() {
        if (pendingBytes) await flush(Buffer.concat(pending))
        pending = []
        pendingBytes = 0
      },
      async discard() {
        pending = []
        pendingBytes = 0
        await companyTransaction(knex, companyId, (trx) =>
          trx('blob_chunks').where({ idempresa: companyId, upload_id: uploadId }).delete(),
        ).catch(() => undefined)
      },
    }
  }

  async *read(
    companyId: number,
    sha256: string,
    range?: { start: number; end: number },
  ): AsyncIterable<Buffer> {
    const [blob] = await companyRead<{ upload_id: string; size_bytes: string }>(
      this.knex,
      companyId,
      this.knex('blobs').where({ idempresa: companyId, sha256 }).select('upload_id', 'size_bytes'),
    )
    if (!blob) throw new Error(`content ${sha256} of company ${companyId} is missing`)
    const size = Number(blob.size_bytes)
    const start = range?.start ?? 0
    const end = range?.end ?? size - 1
    if (end < start) return
    const first = Math.floor(start / CHUNK_BYTES)
    const last = Math.floor(end / CHUNK_BYTES)
    // One chunk a statement: the answer streams at the client's pace, holding one chunk at a time.
    for (let seq = first; seq <= last; seq++) {
      const [row] = await companyRead<{ data: Buffer }>(
        this.knex,
        companyId,
        this.knex('blob_chunks')
          .where({ idempresa: companyId, upload_id: blob.upload_id, seq })
          .select('data'),
      )
      if (!row) throw new Error(`chunk ${seq} of content ${sha256} is missing`)
      const from = seq === first ? start - seq * CHUNK_BYTES : 0
      const to = seq === last ? end - seq * CHUNK_BYTES + 1 : row.data.length
      yield row.data.subarray(from, to)
    }
  }
}

/** What a document's transaction does with contents (its company's, in its transaction). */
export class ContentTxRepository implements ContentTx {
  constructor(
    private readonly trx: Knex.Transaction,
    private readonly companyId: number,
  ) {}

  async adopt(uploadId: string, sha256: string, sizeBytes: number): Promise<void> {
    const { trx, companyId } = this
    // The upsert locks the company's row of that sha256 until this transaction ends, so a
    // concurrent release of the same content waits and then sees this document holding it.
    const [row] = await trx('blobs')
      .insert({ idempresa: companyId, sha256, upload_id: uploadId, size_bytes: sizeBytes })
      .onConflict(['idempresa', 'sha256'])
      .merge({ size_bytes: trx.raw('blobs.size_bytes') })
      .returning('upload_id')
    if ((row as { upload_id: string }).upload_id !== uploadId)
      await trx('blob_chunks').where({ idempresa: companyId, upload_id: uploadId }).delete()
  }

  async release(sha256: string): Promise<void> {
    const { trx, companyId } = this
    const blob = await trx('blobs').where({ idempresa: companyId, sha256 }).forUpdate().first('upload_id')
    if (!blob) return
    const holders = await trx('documents')
      .where({ idempresa: companyId, sha256, status: 'available' })
      .count({ n: '*' })
      .first()
    if (Number(holders?.n ?? 0) > 0) return
    await trx('blob_chunks').where({ idempresa: companyId, upload_id: blob.upload_id }).delete()
    await trx('blobs').where({ idempresa: companyId, sha256 }).delete()
  }
}
