/**
 * The base error and the generic HTTP errors of DESIGN.md section 3. Errors that one service owns
 * (slot_conflict, guardian_required, ...) extend AppError in that service's domain/errors.ts. The
 * platform HTTP plugin turns any AppError into application/problem+json (RFC 9457). Messages
 * never carry patient data.
 */
export const PROBLEM_BASE = 'https://clinic.example/problems/'

export interface FieldError {
  path: string
  message: string
}

export interface AppErrorInit {
  status: number
  code: string
  title: string
  detail?: string
  errors?: FieldError[]
  headers?: Record<string, string>
  /** Members of the problem beyond RFC 9457's (a slot conflict's `alternatives`). */
  extensions?: Record<string, unknown>
}

export class AppError extends Error {
  readonly status: number
  readonly code: string
  readonly title: string
  readonly detail: string | undefined
  readonly errors: FieldError[] | undefined
  readonly headers: Record<string, string> | undefined
  readonly extensions: Record<string, unknown> | undefined
  constructor(init: AppErrorInit) {
    super(init.detail ?? init.title)
    this.name = new.target.name
    this.status = init.status
    this.code = init.code
    this.title = init.title
    this.detail = init.detail
    this.errors = init.errors
    this.headers = init.headers
    this.extensions = init.extensions
  }
}

export class ValidationFailed extends AppError {
  constructor(errors: FieldError[], detail = 'One or more fields are not valid') {
    super({ status: 400, code: 'validation_failed', title: 'Request is not valid', detail, errors })
  }
}
export class UnknownCenter extends AppError {
  constructor() {
    super({
      status: 400,
      code: 'unknown_center',
      title: 'Unknown center',
      detail: 'codalmacen is not a center of this company',
    })
  }
}
export class Unauthenticated extends AppError {
  constructor(detail = 'A valid API token is required') {
    super({
      status: 401,
      code: 'unauthenticated',
      title: 'Authentication required',
      detail,
      headers: { 'www-authenticate': 'Basic realm="clinic"' },
    })
  }
}
export class CenterForbidden extends AppError {
  constructor() {
    super({
      status: 403,
      code: 'center_forbidden',
      title: 'Center not allowed',
      detail: 'This token may not use that center',
    })
  }
}
export class NotFound extends AppError {
  constructor(detail = 'The resource does not exist') {
    super({ status: 404, code: 'not_found', title: 'Not found', detail })
  }
}
/** A `patient_id` that is not a patient of the caller's company (services that refer to patients). */
export class UnknownPatient extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'unknown_patient',
      title: 'Unknown patient',
      detail: 'patient_id is not a patient of this company',
    })
  }
}
/** An `appointment_id` that is not an appointment of that patient in the caller's company. */
export class UnknownAppointment extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'unknown_appointment',
      title: 'Unknown appointment',
      detail: 'appointment_id is not an appointment of this patient in this company',
    })
  }
}
/** An `exam_id` that is not an exam of that patient in the caller's company. */
export class UnknownExam extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'unknown_exam',
      title: 'Unknown exam',
      detail: 'exam_id is not an exam of this patient in this company',
    })
  }
}

export class IdempotencyConflict extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'idempotency_conflict',
      title: 'Idempotency key reused',
      detail: 'This Idempotency-Key was used with a different request body',
    })
  }
}
export class VersionMismatch extends AppError {
  constructor() {
    super({
      status: 412,
      code: 'version_mismatch',
      title: 'Version mismatch',
      detail: 'If-Match does not match the current version; read the resource again',
    })
  }
}
export class PayloadTooLarge extends AppError {
  constructor(limit: number) {
    super({
      status: 413,
      code: 'payload_too_large',
      title: 'Payload too large',
      detail: `Request bodies are limited to ${limit} bytes`,
    })
  }
}
export class HeadersTooLarge extends AppError {
  constructor() {
    super({
      status: 431,
      code: 'headers_too_large',
      title: 'Request header fields too large',
      detail: 'The request line and headers may take 16 KiB at most',
    })
  }
}

export class UnsupportedMediaType extends AppError {
  constructor() {
    super({
      status: 415,
      code: 'unsupported_media_type',
      title: 'Unsupported media type',
      detail: 'Request bodies must be application/json',
    })
  }
}
export class RateLimited extends AppError {
  constructor(retryAfterSeconds: number) {
    super({
      status: 429,
      code: 'rate_limited',
      title: 'Too many requests',
      detail: `Rate limit exceeded; retry in ${retryAfterSeconds} s`,
      headers: { 'retry-after': String(retryAfterSeconds) },
    })
  }
}
export class NotImplemented extends AppError {
  constructor(area: string) {
    super({
      status: 501,
      code: 'not_implemented',
      title: 'Not implemented',
      detail: `The ${area} area is planned for a later release`,
    })
  }
}
export class UpstreamUnavailable extends AppError {
  constructor(detail = 'A service is temporarily unavailable', retryAfterSeconds = 5) {
    super({
      status: 503,
      code: 'upstream_unavailable',
      title: 'Service unavailable',
      detail,
      headers: { 'retry-after': String(retryAfterSeconds) },
    })
  }
}
export class InternalError extends AppError {
  constructor() {
    super({
      status: 500,
      code: 'internal_error',
      title: 'Internal error',
      detail: 'Something went wrong on our side; quote request_id when reporting it',
    })
  }
}

export interface ProblemBody {
  type: string
  title: string
  status: number
  code: string
  detail?: string
  request_id: string
  errors?: FieldError[]
  [member: string]: unknown
}

export function problemBody(err: AppError, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: PROBLEM_BASE + err.code,
    title: err.title,
    status: err.status,
    code: err.code,
    request_id: requestId,
  }
  if (err.detail) body.detail = err.detail
  if (err.errors) body.errors = err.errors
  return err.extensions ? { ...err.extensions, ...body } : body
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

// The database (or the path to it) is away: refused, cut, reset, shut down by an admin, or no pool
// connection in time. Transient, so 503 with Retry-After rather than 500.
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH'])
// 53300: too_many_connections (the server's slots are full): the database is there, not for us yet.
const CONNECTION_SQLSTATES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300'])
// The transaction lost a race with another (deadlock, serialization failure, lock not available):
// nothing was written, and the same request may succeed an instant later.
const CONFLICT_SQLSTATES = new Set(['40P01', '40001', '55P03'])
export const isTransactionConflict = (err: Error & { code?: unknown }): boolean =>
  typeof err.code === 'string' && CONFLICT_SQLSTATES.has(err.code)

export function isConnectionError(err: Error & { code?: unknown }): boolean {
  const code = typeof err.code === 'string' ? err.code : ''
  return (
    CONNECTION_CODES.has(code) ||
    CONNECTION_SQLSTATES.has(code) ||
    err.name === 'KnexTimeoutError' ||
    // knex prefixes the SQL ("insert into ... - Connection terminated unexpectedly")
    /Connection terminated|connection is closed|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect/i.test(
      err.message,
    )
  )
}
