import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions'
import { JobRunner, SpanKind, endSpan, startSpan, type Span } from '@clinic/platform'
import { retryUntil } from '@clinic/platform/core'
import type { Logger } from 'pino'
import type { AttemptRecord, Job, JobStore } from './job-store'
import { Recorder } from './recorder'
import { signatureHeader, type SecretBox } from '../domain/secrets'
import type { AddressPolicy } from './address-policy'
import { SEND_LIMITS, sendWebhook, type SendResult } from './send'

export interface WorkerOptions {
  jobs: JobStore
  log: Logger
  box: SecretBox
  policy: AddressPolicy
  /** What time it is for scheduling (tests move it); the signature's timestamp is always real. */
  clock: () => Date
  /** Deliveries in flight at once in this process. */
  concurrency: number
  /** Deliveries in flight at once to one endpoint, across every process. */
  perEndpoint: number
  /** Milliseconds from failed attempt n to the next; its length is the number of retries. */
  retrySchedule: number[]
  /** How often to look for due deliveries without a notification. */
  pollMs?: number
  limits?: typeof SEND_LIMITS
  random?: () => number
}

/**
 * Longer than an attempt can take (10 s) and the write of its outcome: a lease that runs out means
 * the worker died mid-attempt (or lost its claim's answer), and the delivery is claimed again.
 */
const LEASE_MS = 30_000
/** DESIGN.md section 10: an endpoint with no success for a day whose message used every attempt. */
const NO_SUCCESS_MS = 24 * 60 * 60 * 1000

/** The delay before retry n (1-based), with up to 20% jitter either way; null when none is left. */
export function retryDelay(schedule: number[], attempt: number, random = Math.random): number | null {
  const base = schedule[attempt - 1]
  return base === undefined ? null : Math.round(base * (0.8 + 0.4 * random()))
}

/** What an attempt's result means for the delivery and its endpoint. */
export function outcomeOf(
  job: Job,
  sent: SendResult,
  o: Pick<WorkerOptions, 'retrySchedule' | 'random'>,
  now: Date,
): AttemptRecord {
  const base = { last_status_code: sent.status, last_error: sent.error, last_duration_ms: sent.durationMs }
  if (sent.ok) return { ...base, status: 'succeeded', next_attempt_at: null }
  if (sent.status === 410)
    return { ...base, status: 'failed', next_attempt_at: null, disable: 'the receiver answered 410 Gone' }
  const delay = retryDelay(o.retrySchedule, job.attempts, o.random)
  if (delay !== null) return { ...base, status: 'pending', next_attempt_at: new Date(now.getTime() + delay) }
  return {
    ...base,
    status: 'failed',
    next_attempt_at: null,
    disableIfNoSuccessSince: new Date(now.getTime() - NO_SUCCESS_MS),
  }
}

/**
 * The delivery worker: claims due deliveries from PostgreSQL (SKIP LOCKED, per-endpoint limit in
 * the claim), sends each signed (Standard Webhooks), and writes the outcome and the next attempt's
 * time back. Nothing is held in process timers: a restart picks up every pending delivery, and a
 * delivery whose worker died is claimed again when its lease runs out.
 */
export class DeliveryWorker extends JobRunner<Job> {
  private readonly recorder: Recorder

  constructor(private readonly o: WorkerOptions) {
    super({ name: 'deliveries', concurrency: o.concurrency, pollMs: o.pollMs ?? 500, log: o.log })
    this.recorder = new Recorder(o.jobs)
  }

  protected claimJobs(limit: number): Promise<Job[]> {
    const o = this.o
    return o.jobs.claim({ now: o.clock(), limit, perEndpoint: o.perEndpoint, leaseMs: LEASE_MS })
  }

  /** A delivery's attempts are spans of the trace that queued it (the consumer's, or a request's). */
  protected override causeOf(job: Job) {
    return job.traceparent ? { traceparent: job.traceparent } : undefined
  }

  protected runJob(job: Job, span: Span): Promise<void> {
    return this.attempt(job, span).catch((err: unknown) =>
      this.o.log.error(
        { err, delivery_id: job.id, trace_id: span.spanContext().traceId },
        'delivery attempt failed to record',
      ),
    )
  }

  /**
   * Writes the outcome, trying again while the database is away, until the lease would run out
   * (then the delivery is claimed again: a 2xx not recorded by then may be sent once more).
   */
  private record(job: Job, r: AttemptRecord, now: Date, claimedAt: number): Promise<boolean> {
    return retryUntil(() => this.recorder.record({ job, record: r, now }), {
      until: claimedAt + LEASE_MS - 5000,
      onRetry: (err) =>
        this.o.log.warn({ err, delivery_id: job.id }, 'recording an attempt failed; trying again'),
    })
  }

  /** The request of an attempt: the body and its Standard Webhooks headers (timestamp: now, real). */
  private signed(job: Job) {
    const secrets = [this.o.box.open(job.secret, job.endpoint_id)]
    if (job.previous_secret && job.previous_secret_until && job.previous_secret_until > this.o.clock())
      secrets.push(this.o.box.open(job.previous_secret, job.endpoint_id))
    const body = JSON.stringify({
      type: job.event_type,
      timestamp: job.occurred_at.toISOString(),
      data: job.data,
    })
    const timestamp = Math.floor(Date.now() / 1000)
    return {
      url: job.url,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'clinic-webhooks/1',
        'webhook-id': job.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, job.event_id, timestamp, body),
      },
    }
  }

  private async attempt(job: Job, run: Span) {
    const claimedAt = Date.now()
    const trace_id = run.spanContext().traceId
    let sent: SendResult
    // The POST itself (HTTP client conventions; the URL stays out: its query may hold a receiver's
    // secret). The receiver gets no traceparent: the trace is the clinic's, not the integrator's.
    const post = startSpan('webhook POST', {
      kind: SpanKind.CLIENT,
      parent: run.spanContext(),
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: 'POST',
        'clinic.delivery_id': job.id,
        'clinic.endpoint_id': job.endpoint_id,
        'clinic.event_id': job.event_id,
        'clinic.attempt': job.attempts,
      },
    })
    try {
      sent = await sendWebhook(this.signed(job), this.o.policy, this.o.limits)
    } catch (err) {
      // A secret that does not open (WEBHOOKS_SECRET_KEY changed): a failed attempt, on the log.
      this.o.log.error({ err, endpoint_id: job.endpoint_id, trace_id }, 'webhook could not be signed')
      sent = { status: null, ok: false, durationMs: 0, error: 'the signing secret could not be read' }
    }
    if (sent.status !== null) post.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, sent.status)
    endSpan(post, sent.ok ? undefined : { code: sent.status === null ? 'no_answer' : `HTTP ${sent.status}` })
    const done = this.o.clock()
    const record = outcomeOf(job, sent, this.o, done)
    const kept = await this.record(job, record, done, claimedAt)
    this.o.log.info(
      {
        delivery_id: job.id,
        endpoint_id: job.endpoint_id,
        event_id: job.event_id,
        attempt: job.attempts,
        status_code: sent.status,
        outcome: record.status,
        duration_ms: sent.durationMs,
        trace_id,
        ...(kept ? {} : { lease_lost: true }),
      },
      'webhook attempt',
    )
  }
}
