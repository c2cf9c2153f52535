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
        err: serializeError,
      },
    },
    destination,
  )
}

/**
 * What a PostgreSQL error may put in a log line. Never its message (knex prefixes the SQL with the
 * bound values; PostgreSQL quotes input in messages like "invalid input syntax"), `detail`
 * ("Key (national_id)=(...)"), `where` (quotes JSON and parameters), `hint` or `internalQuery`.
 */
const DB_ERROR_FIELDS = ['code', 'severity', 'constraint', 'routine', 'schema', 'table', 'column', 'dataType']

type ErrorLike = Error & Record<string, unknown>

/** A pg DatabaseError (knex rethrows the same object): an SQLSTATE code and a severity. */
function isDbError(e: unknown): boolean {
  const x = e as Record<string, unknown> | null
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof x.severity === 'string' &&
    typeof x.code === 'string' &&
    /^[0-9A-Z]{5}$/.test(x.code)
  )
}

function causes(e: unknown): unknown[] {
  const out: unknown[] = []
  for (let c = e; c && typeof c === 'object' && out.length < 10; c = (c as { cause?: unknown }).cause)
    out.push(c)
  return out
}

/** The `at ...` lines of a stack, without its first line (which repeats the message). */
const framesOf = (stack: unknown) =>
  typeof stack === 'string'
    ? stack
        .split('\n')
        .filter((l) => /^\s+at /.test(l))
        .join('\n')
    : undefined

/**
 * pino's `err` serializer, except that a database error anywhere in the cause chain is logged from
 * DB_ERROR_FIELDS only, and the messages of the chain are kept apart (pino's serializer would join
 * the cause's message into the outer one).
 */
export function serializeError(err: unknown): unknown {
  if (!causes(err).some(isDbError)) return pino.stdSerializers.err(err as Error)
  const e = err as ErrorLike
  if (isDbError(e)) {
    const out: Record<string, unknown> = {
      type: e.constructor?.name ?? 'DatabaseError',
      message: `database error ${String(e.code)}`,
    }
    for (const f of DB_ERROR_FIELDS) if (e[f] !== undefined) out[f] = e[f]
    out.stack = framesOf(e.stack)
    return out
  }
  return {
    type: e.constructor?.name ?? 'Error',
    message: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    stack: framesOf(e.stack),
    cause: serializeError(e.cause),
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The client's X-Request-Id when it is sane, else a new one. */
export function requestIdFrom(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id']
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : uuidv7()
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const

/**
 * `parent.child(bindings)`, made only when a line is written at a level that is enabled. A pino
 * child serialises its bindings and wraps the redaction on creation: done for every request (the
 * request's logger with `request_id`, its context's with `company_id`), that cost most of the
 * logging's CPU while most requests write no line below warn. Everything but the
 * level methods, `child` and `bindings` is the parent's (its level, isLevelEnabled, ...).
 */
export function lazyChild(parent: Logger, bindings: pino.Bindings): Logger {
  // A lazy child of a lazy child (a request's context logger) is one of the first's parent, with
  // both bindings: the same lines, and no prototype made per request.
  const outer = parent as Partial<Lazy>
  if (outer[LAZY_PARENT] && !outer[LAZY_REAL])
    return lazyChild(outer[LAZY_PARENT], { ...outer[LAZY_BINDINGS], ...bindings })
  const lazy = Object.create(lazyPrototype(parent)) as Lazy
  lazy[LAZY_PARENT] = parent
  lazy[LAZY_BINDINGS] = bindings
  return lazy
}

const LAZY_PARENT = Symbol('lazy parent')
const LAZY_BINDINGS = Symbol('lazy bindings')
const LAZY_REAL = Symbol('lazy real')
type Lazy = Logger & { [LAZY_PARENT]: Logger; [LAZY_BINDINGS]: pino.Bindings; [LAZY_REAL]?: Logger }

const made = (lazy: Lazy) => (lazy[LAZY_REAL] ??= lazy[LAZY_PARENT].child(lazy[LAZY_BINDINGS]))

/**
 * What the lazy children of one parent share: the level methods, `child` and `bindings` (each
 * child holds only its parent and bindings, not closures of its own), over the parent itself.
 */
const lazyPrototypes = new WeakMap<Logger, Logger>()
function lazyPrototype(parent: Logger): Logger {
  let proto = lazyPrototypes.get(parent)
  if (proto) return proto
  proto = Object.create(parent) as Logger
  for (const level of LEVELS)
    (proto as unknown as Record<string, unknown>)[level] = function (this: Lazy, ...args: unknown[]) {
      if (this[LAZY_REAL] || parent.isLevelEnabled(level))
        (made(this)[level] as (...a: unknown[]) => void)(...args)
    }
  proto.child = function (this: Lazy, b: pino.Bindings, o?: pino.ChildLoggerOptions) {
    return made(this).child(b, o)
  } as unknown as Logger['child']
  proto.bindings = function (this: Lazy) {
    return { ...parent.bindings(), ...this[LAZY_BINDINGS] }
  }
  lazyPrototypes.set(parent, proto)
  return proto
}
