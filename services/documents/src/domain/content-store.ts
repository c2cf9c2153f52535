/**
 * Where document bytes live, content-addressed per company (DESIGN.md section 15): one interface,
 * so another store (an S3-compatible bucket) can be added without touching routes or use cases.
 * The PostgreSQL implementation is db/repositories/content-repository.ts.
 *
 * An upload is staged as it streams (its hash is known only at the end); the document's
 * transaction then adopts it (`ContentTx.adopt`) or, if it fails, the staging is discarded.
 */
export interface ContentStore {
  /** A place for one upload's bytes, in order; nothing is visible until adopted. */
  stage(companyId: number): StagedContent
  /** The bytes of a held content, from `start` to `end` inclusive (default: all of it). */
  read(companyId: number, sha256: string, range?: { start: number; end: number }): AsyncIterable<Buffer>
}

export interface StagedContent {
  readonly uploadId: string
  /** Appends bytes (buffered into the store's chunk size; resolves once they are safe to drop). */
  write(bytes: Buffer): Promise<void>
  /** Writes what is still buffered. */
  finish(): Promise<void>
  /** Drops whatever was written (an upload refused or failed). Never throws. */
  discard(): Promise<void>
}

/** What a document's transaction does with contents (the same transaction as the document row). */
export interface ContentTx {
  /**
   * Makes a staged upload the company's content of `sha256`, or drops its bytes when the company
   * already holds that content (the upload's bytes are then not needed).
   */
  adopt(uploadId: string, sha256: string, sizeBytes: number): Promise<void>
  /**
   * Removes the content of `sha256` unless a document of the company that is not deleted still
   * holds it. Called after the document that held it was marked deleted, in that transaction.
   */
  release(sha256: string): Promise<void>
}
