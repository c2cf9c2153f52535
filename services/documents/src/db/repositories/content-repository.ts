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
/** Bytes a download reads per statement: a slice of a chunk (its hex text stays under 64 KiB). */
const READ_SLICE_BYTES = 30 * 1024

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
    // One chunk's buffer per upload, filled in place and reused once its row is written: ten
    // uploads at once allocate ten of them, not a buffer per piece the socket hands over.
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES)
    let filled = 0
    let seq = 0
    const flush = async () => {
      const n = seq++
      const bytes = chunk.subarray(0, filled)
      await companyTransaction(knex, companyId, (trx) =>
        trx('blob_chunks').insert({ idempresa: companyId, upload_id: uploadId, seq: n, data: bytes }),
      )
      filled = 0
    }
    return {
      uploadId,
      async write(bytes) {
        let at = 0
        while (at < bytes.length) {
          const take = Math.min(CHUNK_BYTES - filled, bytes.length - at)
          bytes.copy(chunk, filled, at, at + take)
          filled += take
          at += take
          if (filled === CHUNK_BYTES) await flush()
        }
      },
      async finish() {
        if (filled) await flush()
      },
      async discard() {
        filled = 0
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
    // A slice of a chunk a statement (bytea comes back as hex text, twice its size): small
    // strings the young generation frees at once, so ten downloads at once hold a few slices,
    // never chunks piling up in the large-object space; the answer streams at the client's pace.
    for (let seq = first; seq <= last; seq++) {
      const from = seq === first ? start - seq * CHUNK_BYTES : 0
      const to = seq === last ? end - seq * CHUNK_BYTES + 1 : CHUNK_BYTES
      for (let at = from; at < to; at += READ_SLICE_BYTES) {
        const length = Math.min(READ_SLICE_BYTES, to - at)
        const [row] = await companyRead<{ data: Buffer | null }>(
          this.knex,
          companyId,
          this.knex('blob_chunks')
            .where({ idempresa: companyId, upload_id: blob.upload_id, seq })
            .select(
              this.knex.raw('substring(data from ?::integer for ?::integer) AS data', [at + 1, length]),
            ),
        )
        if (!row?.data) throw new Error(`chunk ${seq} of content ${sha256} is missing`)
        yield row.data
      }
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
