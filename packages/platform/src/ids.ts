import { randomFillSync } from 'node:crypto'

let lastMs = 0
let seq = 0
// Random bytes are drawn 4 KiB at a time: one syscall per 256 ids instead of two per id.
const pool = Buffer.alloc(4096)
let poolAt = pool.length
/** Where the next `bytes` random bytes of the pool begin (refilled when too few are left). */
function take(bytes: number): number {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool)
    poolAt = 0
  }
  const at = poolAt
  poolAt += bytes
  return at
}
/** The id being made: 16 random bytes of the pool copied in, then stamped (no Buffer made per id). */
const id = Buffer.alloc(16)

/** `bytes` random bytes as base64url, drawn from the same pool (no Buffer made per call). */
export function randomBase64url(bytes: number): string {
  const at = take(bytes)
  return pool.toString('base64url', at, at + bytes)
}

/**
 * UUIDv7 (RFC 9562): 48-bit Unix ms timestamp, then random bits. Ids sort by creation time,
 * which keeps B-tree inserts local and lets cursors page in creation order.
 * A 12-bit counter in rand_a keeps ids monotonic within one millisecond in this process.
 */
export function uuidv7(now = Date.now()): string {
  const b = id
  const at = take(16)
  // Byte by byte: Buffer#copy of a part of the pool makes a view of it first.
  for (let i = 0; i < 16; i++) b[i] = pool[at + i]!
  if (now <= lastMs) {
    seq = (seq + 1) & 0xfff
    if (seq === 0) lastMs += 1
    now = lastMs
  } else {
    lastMs = now
    seq = b.readUInt16BE(6) & 0x7ff
  }
  b.writeUIntBE(now, 0, 6)
  b[6] = 0x70 | (seq >> 8)
  b[7] = seq & 0xff
  b[8] = 0x80 | (b[8]! & 0x3f)
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const uuidRe = new RegExp(UUID_PATTERN)
export const isUuid = (s: string): boolean => uuidRe.test(s)
