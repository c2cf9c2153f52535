import type { ThinData } from '../domain/catalogue'

/** A claimed delivery and what its attempt needs. */
export interface Job {
  idempresa: number
  id: string
  /** This attempt's number (1 for the first). */
  attempts: number
  leased_until: Date
  event_id: string
  event_type: string
  occurred_at: Date
  data: ThinData
  endpoint_id: string
  url: string
  secret: Buffer
  previous_secret: Buffer | null
  previous_secret_until: Date | null
  /** What queued it (W3C): each attempt is a span of that trace. */
  traceparent: string | null
}

export interface AttemptRecord {
  status: 'pending' | 'succeeded' | 'failed'
  next_attempt_at: Date | null
  last_status_code: number | null
  last_error: string | null
  last_duration_ms: number
  /** Disable the endpoint, for this reason. */
  disable?: string
  /** When set, disable also when the endpoint had no success since this instant. */
  disableIfNoSuccessSince?: Date
}

/** An attempt's outcome to write: the job, what happened, and when (the worker's clock). */
export interface Outcome {
  job: Job
  record: AttemptRecord
  now: Date
}

/** What the delivery worker needs from storage (db/repositories/worker-repository.ts). */
export interface JobStore {
  /** Due deliveries of every company, leased to this worker, at most `perEndpoint` per endpoint. */
  claim(o: { now: Date; limit: number; perEndpoint: number; leaseMs: number }): Promise<Job[]>
  /**
   * Writes many outcomes in one transaction, each only while its job's lease is still this
   * worker's: the ids written.
   */
  record(outcomes: Outcome[]): Promise<Set<string>>
}
