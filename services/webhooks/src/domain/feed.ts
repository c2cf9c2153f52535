import {
  ValidationFailed,
  visibleCenters,
  type CloudEvent,
  type Ctx,
  type Trace,
} from '@clinic/platform/core'
import type { FeedInput } from '../schemas/endpoint'
import type { ThinData } from './catalogue'
import { CursorExpired } from './errors'

/** What one read of the feed asks: after which number, which types and centers, how many. */
export interface FeedRead {
  after: number
  types: string[] | null
  centers: string[] | null
  limit: number
}
export interface FeedRow {
  id: string
  seq: number
  type: string
  timestamp: string
  data: ThinData
}
export interface FeedSource {
  read(companyId: number, f: FeedRead): Promise<{ rows: FeedRow[]; head: number; oldest: number | null }>
  /** Resolves when the company's feed may have grown, or after `ms`, or when `signal` aborts. */
  changed(companyId: number, ms: number, signal: AbortSignal): Promise<void>
}

/**
 * Where the consumer stores the events it takes (db/repositories/feed-repository.ts), in its
 * transaction `tx` (the one that also records the event ids): the feed and the deliveries they make.
 */
export interface FeedWriter<Tx> {
  /** `traces`: each event's handling span (the consumer's), which its deliveries' attempts are children of. */
  store(tx: Tx, events: CloudEvent[], now: Date, traces: (event: CloudEvent) => Trace): Promise<void>
}

const PREFIX = 'feed.'
/** An opaque cursor: the last number a reader has seen. */
export const feedCursor = (seq: number) => Buffer.from(`${PREFIX}${seq}`).toString('base64url')

export function parseFeedCursor(after: string | undefined): number {
  if (after === undefined) return 0
  const m = /^feed\.(\d{1,15})$/.exec(Buffer.from(after, 'base64url').toString('utf8'))
  if (!m)
    throw new ValidationFailed([{ path: '/after', message: 'is not a cursor of this feed (use meta.next)' }])
  return Number(m[1])
}

/** How often a waiting read looks again even without a notification (a lost LISTEN connection). */
const RECHECK_MS = 1000

/**
 * One page of the company's change feed (DESIGN.md section 10), in the order the service stored
 * the events. With `wait`, an empty page waits up to that many seconds for an event. A cursor
 * before the oldest kept event, with events lost since, is 410 cursor_expired. `meta.next` moves
 * past events the filters skipped: up to the company's head when the page is not full.
 */
export async function readFeedPage(
  ctx: Ctx,
  source: FeedSource,
  input: FeedInput,
  signal: AbortSignal,
): Promise<{ data: Array<Omit<FeedRow, 'seq'>>; meta: { next: string } }> {
  const after = parseFeedCursor(input.after)
  const read: FeedRead = {
    after,
    types: input.types ? [...new Set(input.types.split(','))] : null,
    centers: visibleCenters(ctx.auth, input.codalmacen),
    limit: input.limit ?? 100,
  }
  const deadline = Date.now() + (input.wait ?? 0) * 1000
  for (;;) {
    const { rows, head, oldest } = await source.read(ctx.auth.companyId, read)
    if (after < head && (oldest === null || oldest > after + 1)) throw new CursorExpired()
    const left = deadline - Date.now()
    if (rows.length || left <= 0 || signal.aborted) {
      const last = rows.at(-1)?.seq ?? after
      const next = rows.length < read.limit ? Math.max(last, head) : last
      return { data: rows.map(({ seq: _seq, ...e }) => e), meta: { next: feedCursor(next) } }
    }
    await source.changed(ctx.auth.companyId, Math.min(left, RECHECK_MS), signal)
  }
}
