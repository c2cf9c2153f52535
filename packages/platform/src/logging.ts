import pino, { type Logger } from 'pino'
import { uuidv7 } from './ids'

/**
 * Paths pino censors wherever they appear at these depths. Tokens and auth headers never reach a
 * log line; nor do patient fields, if some code logs a patient or a request body by mistake.
 */
const PATIENT_FIELDS = [
  'first_name',
  'last_name',
  'birth_date',
  'national_id',
  'email',
  'phone',
  'address',
  'guardian',
  'notes',
  'body',
  'subject',
  'reason',
]
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-service-token"]',
  'req.headers["x-clinic-assertion"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-service-token"]',
  'headers["x-clinic-assertion"]',
  'headers.cookie',
  'token',
  '*.token',
  'password',
  '*.password',
  ...PATIENT_FIELDS,
  ...PATIENT_FIELDS.map((f) => `*.${f}`),
  ...PATIENT_FIELDS.map((f) => `*.*.${f}`),
]

export interface LoggerOptions {
  service: string
  level?: string
  destination?: pino.DestinationStream
}

export function createLogger({ service, level = 'info', destination }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: { service },
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        // The path only: a query string can hold a patient's name (?q=...).
        req: (req: { method?: string; url?: string }) => ({
          method: req.method,
          path: req.url?.split('?')[0],
        }),
        res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
        err: pino.stdSerializers.err,
      },
    },
    destination,
  )
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The client's X-Request-Id when it is sane, else a new one. */
export function requestIdFrom(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id']
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : uuidv7()
}
