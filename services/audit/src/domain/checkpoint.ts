import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { canonicalJson } from '@clinic/platform/core'

/**
 * A checkpoint: companies' chain heads at one instant, signed with a key derived from
 * AUDIT_CHAIN_KEY and kept outside the database (one JSON line of AUDIT_CHECKPOINT_FILE). Heads
 * only move forward, so every head a checkpoint ever named must still be in the chain: a database
 * owner who cuts the tail of a trail and moves chain_heads back shows in `audit:verify`, however
 * many checkpoints were written after the cut (verification holds the chain against the highest).
 */
export interface CheckpointHead {
  idempresa: number
  seq: number
  hash: string
}

/** Where a checkpoint reads the heads from (db/repositories/chain-heads-repository.ts). */
export interface ChainHeadSource {
  /** Every company's chain head, read in one snapshot, in company order. */
  all(): Promise<CheckpointHead[]>
  /**
   * The identity of the database the heads are read from: the same after a restart or a failover
   * to a physical standby, another for any other database (see DatabaseIdentity).
   */
  database(): Promise<string>
}

/**
 * A checkpoint file outlives its database (a reset, a second stack in the same checkout), so each
 * line names the database whose heads it holds; verification holds a chain only against its own
 * database's lines. Version 1 lines name none: they are held against any database, as they were.
 */
export type Checkpoint =
  | {
      v: 2
      /** When the heads were read (ISO instant). */
      at: string
      /** The database the heads were read from (ChainHeadSource.database). */
      db: string
      heads: CheckpointHead[]
    }
  | { v: 1; at: string; heads: CheckpointHead[] }

export type ParsedCheckpoint = { ok: true; checkpoint: Checkpoint } | { ok: false; reason: string }

/** Domain separation: the checkpoint key is not the chain key, so no event hash is a signature. */
const CONTEXT = 'audit-checkpoint-v1'

const checkpointKey = (chainKey: string): Buffer => createHmac('sha256', chainKey).update(CONTEXT).digest()

const signatureOf = (body: Checkpoint, chainKey: string): string =>
  createHmac('sha256', checkpointKey(chainKey)).update(canonicalJson(body)).digest('hex')

/** The line written for `heads` of database `db` read at `at` (no newline): canonical JSON with its `sig`. */
export function checkpointLine(
  at: Date,
  heads: readonly CheckpointHead[],
  chainKey: string,
  db: string,
): string {
  const body: Checkpoint = {
    v: 2,
    at: at.toISOString(),
    db,
    heads: heads.map((h) => ({ idempresa: h.idempresa, seq: h.seq, hash: h.hash })),
  }
  return canonicalJson({ ...body, sig: signatureOf(body, chainKey) })
}

/** What the log says of a line: its SHA-256, to match a log entry with the file. */
export const lineDigest = (line: string): string => createHash('sha256').update(line).digest('hex')

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0

function isHead(h: unknown): h is CheckpointHead {
  if (typeof h !== 'object' || h === null) return false
  const { idempresa, seq, hash, ...rest } = h as Record<string, unknown>
  return isCount(idempresa) && isCount(seq) && typeof hash === 'string' && Object.keys(rest).length === 0
}

/**
 * A line of the file, trusted only if its signature verifies under `chainKey`: any changed field,
 * or a line signed with another key, is refused with a reason (never a value of the line).
 */
export function parseCheckpointLine(line: string, chainKey: string): ParsedCheckpoint {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return { ok: false, reason: 'not JSON' }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, reason: 'not a checkpoint' }
  const { sig, ...body } = value as Record<string, unknown>
  if (typeof sig !== 'string' || !/^[0-9a-f]{64}$/.test(sig)) return { ok: false, reason: 'no signature' }
  const expected = Buffer.from(signatureOf(body as unknown as Checkpoint, chainKey), 'hex')
  if (!timingSafeEqual(expected, Buffer.from(sig, 'hex'))) return { ok: false, reason: 'bad signature' }
  const { v, at, heads, db, ...rest } = body
  if (
    (v !== 1 && v !== 2) ||
    (v === 2 ? typeof db !== 'string' || db === '' : db !== undefined) ||
    typeof at !== 'string' ||
    Number.isNaN(Date.parse(at)) ||
    !Array.isArray(heads) ||
    !heads.every(isHead) ||
    Object.keys(rest).length > 0
  )
    return { ok: false, reason: 'signed, but not a checkpoint of this version' }
  return { ok: true, checkpoint: v === 2 ? { v, at, db: db as string, heads } : { v, at, heads } }
}

/** Whether a checkpoint holds heads of database `db` (a version 1 line names none: it may). */
export const checkpointOf = (checkpoint: Checkpoint, db: string): boolean =>
  checkpoint.v === 1 || checkpoint.db === db

/** A company's highest head over the checkpoints read, and the checkpoint that named it. */
export interface CheckpointedHead {
  at: string
  seq: number
  hash: string
  /** Another hash a checkpoint of this database gave for that same seq (a forgery, or a database restored). */
  disputed?: string
}

/** Folds one checkpoint into a company's highest head so far. */
export function highestHead(
  best: CheckpointedHead | undefined,
  checkpoint: Checkpoint,
  companyId: number,
): CheckpointedHead | undefined {
  const head = checkpoint.heads.find((h) => h.idempresa === companyId)
  if (!head) return best
  if (!best || head.seq > best.seq) return { at: checkpoint.at, seq: head.seq, hash: head.hash }
  if (head.seq === best.seq && head.hash !== best.hash && best.disputed === undefined)
    return { ...best, disputed: head.hash }
  return best
}
