import { createHmac, randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { waitFor } from '@clinic/platform/testing'
import fc from 'fast-check'
import { LINK_TYPE } from '@clinic/platform/core'
import { call, extraGateway, makeTenant, rawExchange, stack, type Tenant } from '../src/client'
import {
  apiOperations,
  callbackOperations,
  fetchDocument,
  type Operation,
  type Parameter,
  type Schema,
} from '../src/operations'

/**
 * Property-based fuzz of every operation of the merged OpenAPI document, through a real gateway
 * and the services (its operations: e2e/src/operations.ts). Four kinds of HTTP cases, sampled up
 * front from a fixed seed (FUZZ_SEED, printed on the `fuzz:` line), the same count per operation:
 *
 * - schema: query strings, headers and bodies derived from each operation's schemas (types, enums,
 *   formats, patterns, lengths, bounds, examples, required fields) and the tenant's own ids
 *   (patients, appointments, messages, registered practitioners with their time off and holds,
 *   webhook endpoints and their deliveries), so most of them pass validation and reach the domain
 *   code (creates, updates, transitions, conflicts, lists with every filter);
 * - mutated: a schema case with one field (nested ones too) or query parameter set to a hostile
 *   value (control characters, NUL, lone surrogates, huge numbers, wrong types, long strings);
 * - hostile: known and unknown names with arbitrary values, arbitrary JSON, 20,000-deep and
 *   3,000-wide JSON, bytes that are not UTF-8, cut JSON, wrong content types, odd headers;
 * - cursor: list operations with a forged `after`: base64url of JSON arrays shaped like the real
 *   cursors (packages/platform/src/cursor.ts) and of anything else, with impossible instants
 *   (`2026-02-30T10:00:00Z`, `+23:59` offsets, year 275760), ids that are not UUIDs, huge numbers,
 *   text that is not base64url or not UTF-8, and the lists' real cursors with one value replaced.
 *
 * Property: every answer is a 2xx, or a 4xx problem+json with a `code`, within TIMEOUT_MS (each
 * request is aborted then: a hang is a failure); never a 5xx. Every operation of the document gets
 * CASES_PER_OPERATION cases (a `fuzz coverage` line shows which never had a 2xx).
 *
 * Alongside, raw cases over a `net` socket, bytes no HTTP client would send: CRLF inside header
 * values, bare CR or LF, NUL, obsolete line folding, `X-Forwarded-*`, `Forwarded`, `X-Real-IP`,
 * `X-Original-URL` and `Host` variants (none, twice, empty, foreign, huge), duplicate or odd
 * `Content-Length`, `Transfer-Encoding` with `Content-Length`, odd chunking, request lines with
 * other versions, methods and targets. Rule: within TIMEOUT_MS the gateway answers with one final
 * status line, 2xx or 4xx (a `100 Continue` before it is fine), and no header we injected appears
 * in the answer; malformed framing is refused by Node's parser with a 400 (the platform's
 * clientErrorHandler writes it as problem+json) and the connection closed, so a connection closed
 * without any status line is accepted only for a case with malformed framing, and a request
 * smuggled behind ambiguous framing is never answered as a second request.
 *
 * And public cases, without an API token, to what the operations above leave aside: the provider
 * callbacks of the document (`security: []`: Twilio's status callback and incoming SMS) and the
 * pages for people outside /api (`/p/a/<token>` patient links, `/p/u/<token>` one-click
 * unsubscribe), with arbitrary, altered, real and oddly signed tokens and any body. Rule: within
 * TIMEOUT_MS, never a 5xx; a callback's refusal is a problem+json with a `code`; a page's answer is
 * an HTML page with the pages' headers (or the gateway's problem+json refusal: 413, 415).
 */
/**
 * The work is a count, not a time: CASES_PER_OPERATION cases for each operation of the document,
 * each operation's drawn from its own seed (SEED and its method and path), so a case is reproduced
 * by FUZZ_SEED whatever other operations exist, and a new service adds its own share.
 */
const CASES_PER_OPERATION = Number(process.env.FUZZ_CASES_PER_OPERATION ?? 160)
const RAW_CASES = Number(process.env.FUZZ_RAW_CASES ?? 800)
const PUBLIC_CASES = Number(process.env.FUZZ_PUBLIC_CASES ?? 600)
const SEED = Number(process.env.FUZZ_SEED ?? 20261123)
const CONCURRENCY = 16
/**
 * A request with no answer by then is a hang. Most answers take tens of milliseconds, but a webhook
 * URL is resolved before it is accepted, and where no DNS server answers each lookup waits out the
 * resolver's 5 s, four at a time (libuv's threads): with the 16 workers on such URLs a case has
 * waited 20 s on a quiet machine. A hang is told from that by a bound far above it.
 */
const TIMEOUT_MS = 60_000
/**
 * The test's own limit, far above the measured runs for 39 operations (51 s alone, 54 s with a CPU
 * burner on the other core, 5 min on a machine shared with five other test runs and a burner): it
 * only stops a run that hangs.
 */
const TEST_LIMIT_MS = 900_000
/** In every free-text value the schema cases send, so the logs can be searched for them. */
const MARK = `Fzm${SEED.toString(36)}${randomUUID().slice(0, 6)}`

type Kind = 'schema' | 'mutated' | 'hostile' | 'cursor'
interface Payload {
  body?: unknown
  raw?: string | Buffer
  contentType?: string
}
interface Case {
  kind: Kind
  op: Operation
  id: string
  /** The path's second parameter (a time off's `{time_off_id}`), when it has one. */
  sub?: string
  query: Array<[string, unknown]>
  headers: Record<string, string>
  payload: Payload
}

/** The fuzz tenant's records: schema cases use them as ids, so reads and writes find something. */
interface Pool {
  patients: string[]
  appointments: string[]
  messages: string[]
  /** Registered practitioners (their slugs), each with a time off and a hold. */
  practitioners: string[]
  timeOffs: string[]
  holds: string[]
  /** Webhook endpoints, and deliveries of theirs. */
  endpoints: string[]
  deliveries: string[]
  centers: string[]
  /** Real `meta.next` cursors, decoded, by list path. */
  cursors: Record<string, unknown[][]>
}

// ---------------------------------------------------------------------------------------------
// Hostile values

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }), // lone surrogates included
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff x',
    '\u202e',
    '%00',
    '\r\nX-Injected: 1',
    '../../etc/passwd',
    "' OR 1=1 --",
  ),
  fc.constantFrom(
    '9'.repeat(400),
    '-1',
    '1e309',
    'NaN',
    '0x10',
    '2026-02-30T25:61:00Z',
    '1899-12-31T00:00:00Z',
  ),
  fc.uuid(),
  fc.string({ minLength: 1000, maxLength: 5000 }),
)
const value: fc.Arbitrary<unknown> = fc.oneof(
  nasty,
  fc.integer(),
  fc.double(),
  fc.constantFrom(Number.MAX_SAFE_INTEGER + 2, -0, 1e308, null, true, false),
  fc.array(nasty, { maxLength: 5 }),
  fc.jsonValue({ maxDepth: 4 }),
)
/** Very deep or very wide JSON, as text (a client's own JSON.stringify may not survive it). */
const monster = fc.oneof(
  fc.integer({ min: 200, max: 20_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 200, max: 5000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc
    .integer({ min: 100, max: 3000 })
    .map((n) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))),
  fc.constantFrom('[1e999999]', `{"n":${'9'.repeat(5000)}}`, '{"a":1,"a":2}', '{"__proto__":{"x":1}}'),
)

// ---------------------------------------------------------------------------------------------
// Values from schemas

const pad = (n: number, w = 2) => String(n).padStart(w, '0')
const DAY_MS = 86_400_000
/** Dates from 1900 to 2025 (birth dates are not in the future). */
const date = fc
  .integer({ min: Date.UTC(1900, 0, 1) / DAY_MS, max: Date.UTC(2025, 11, 31) / DAY_MS })
  .map((d) => new Date(d * DAY_MS).toISOString().slice(0, 10))
/**
 * Instants in a narrow window with various offsets: two of them (starts/ends, from/to) are often
 * in order and less than 12 h apart, so bookings and ranges get past validation to the database.
 */
const dateTime = fc
  .record({
    day: fc.integer({ min: 1, max: 3 }),
    hour: fc.integer({ min: 6, max: 20 }),
    minute: fc.constantFrom(0, 15, 30, 45),
    offset: fc.constantFrom('Z', 'Z', '+00:00', '+01:00', '+02:00', '-05:00', '+05:30', '.000Z'),
  })
  .map(({ day, hour, minute, offset }) => `2031-10-${pad(day)}T${pad(hour)}:${pad(minute)}:00${offset}`)
const email = fc
  .tuple(fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.constantFrom('example.test', 'clinic.example'))
  .map(([local, domain]) => `${MARK.toLowerCase()}.${local}@${domain}`)
/** Spanish mobile numbers (E.164): an SMS may go to them. */
const phone = fc.stringMatching(/^\+346[0-9]{8}$/)
const UUID_PATTERN = /\[0-9a-fA-F\]\{8\}/

/**
 * A pattern without its lookarounds (`(?=...)`, `(?!...)`, `(?<=...)`, `(?<!...)`), which
 * fc.stringMatching cannot generate ("Assertions of kind Lookahead not implemented yet"). Without
 * this, such a pattern fell back to filtering arbitrary text by it: a text that happens to be an
 * ISO 8601 duration took some 100,000 tries, and sampling the cases took minutes.
 */
function withoutLookarounds(pattern: string): string {
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    if (!/^\(\?<?[=!]/.test(pattern.slice(i, i + 4))) {
      // An escape or a character class is copied whole: a parenthesis in it is no group.
      const m = /^(\\.|\[(\\.|[^\]\\])*\])/s.exec(pattern.slice(i))
      out += m ? m[0] : pattern[i]
      i += m ? m[0].length - 1 : 0
      continue
    }
    // Skips to the parenthesis that closes the lookaround.
    for (let depth = 0; i < pattern.length; i++) {
      const m = /^(\\.|\[(\\.|[^\]\\])*\])/s.exec(pattern.slice(i))
      if (m) i += m[0].length - 1
      else if (pattern[i] === '(') depth++
      else if (pattern[i] === ')' && --depth === 0) break
    }
  }
  return out
}

interface Gen {
  pool: Pool
  doc: { components?: { schemas?: Record<string, Schema> } }
}
const deref = (s: Schema, g: Gen): Schema =>
  s.$ref ? (g.doc.components?.schemas?.[s.$ref.split('/').pop()!] ?? {}) : s

/**
 * Ids of the tenant's records for a field or path parameter, by what it refers to (the more
 * specific families first: a hold's path is under /appointments, a time off's under /practitioners).
 */
function idsFor(name: string, path: string, pool: Pool): string[] {
  const family = name === 'id' ? path.replace(/\{id\}.*/, '') : name
  const mine = (ids: string[]) => (ids.length ? ids : [...pool.patients, ...pool.appointments])
  if (/time_off/.test(family)) return mine(pool.timeOffs)
  if (/hold/.test(family)) return mine(pool.holds)
  if (/practitioner/.test(family)) return mine(pool.practitioners)
  if (/deliver/.test(family)) return mine(pool.deliveries)
  if (/endpoint|webhook/.test(family)) return mine(pool.endpoints)
  if (/patient/.test(family)) return pool.patients
  if (/appointment/.test(family)) return pool.appointments
  if (/message|comms/.test(family)) return pool.messages
  return [...pool.patients, ...pool.appointments, ...pool.messages]
}
/** The other path parameters than `{id}` (a time off's `{time_off_id}`). */
const subParam = (path: string) => /\{(?!id\})(\w+)\}/.exec(path)?.[1]
/** An operation's path with the case's ids in it. */
const pathOf = (op: Operation, id: string, sub?: string) =>
  op.path.replace('{id}', encodePath(id)).replace(/\{\w+\}/, encodePath(sub ?? id))

function stringOf(s: Schema, name: string, path: string, g: Gen): fc.Arbitrary<string> {
  const min = s.minLength ?? 0
  const max = s.maxLength ?? Number.POSITIVE_INFINITY
  const fits = (v: string) => v.length >= min && v.length <= max
  if (s.format === 'uuid' || (s.pattern && UUID_PATTERN.test(s.pattern))) {
    const ids = idsFor(name, path, g.pool)
    return ids.length
      ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ids) }, { weight: 1, arbitrary: fc.uuid() })
      : fc.uuid()
  }
  let base: fc.Arbitrary<string>
  if (s.format === 'date') base = date
  else if (s.format === 'date-time') base = dateTime
  else if (s.format === 'email') base = email
  else if (s.pattern) {
    const re = new RegExp(s.pattern)
    let matching: fc.Arbitrary<string>
    try {
      // Lookarounds (an ISO duration's `^P(?=\d|T\d)...`) are generated without, then filtered by
      // the whole pattern: most of what the rest generates matches.
      const generable = withoutLookarounds(s.pattern)
      matching =
        generable === s.pattern
          ? fc.stringMatching(re)
          : fc.stringMatching(new RegExp(generable)).filter((v) => re.test(v))
    } catch {
      matching = fc
        .string({ minLength: Math.max(min, 1), maxLength: Math.min(max, 40) })
        .filter((v) => re.test(v))
    }
    // Free text (a pattern that takes a prefix, room for it) carries the marker.
    base = matching
      .filter(fits)
      .map((v) => (max >= 50 && re.test(`${MARK} ${v}`) && fits(`${MARK} ${v}`) ? `${MARK} ${v}` : v))
  } else
    base = fc
      .string({ minLength: min, maxLength: Math.min(max, 40) })
      .map((v) => (max >= 50 ? `${MARK} ${v}` : v))
  // A consent's address is an email address or an E.164 number, mostly (free text is always refused).
  if (name === 'address')
    base = fc.oneof({ weight: 6, arbitrary: fc.oneof(email, phone) }, { weight: 1, arbitrary: base })
  // A registered practitioner, mostly (their hours, holds and time off decide bookings).
  if (name === 'practitioner' && g.pool.practitioners.length)
    base = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...g.pool.practitioners) },
      { weight: 1, arbitrary: base },
    )
  // A center of the company, mostly (the pattern alone would name unknown centers).
  if (name === 'codalmacen')
    base = fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(...g.pool.centers) },
      { weight: 1, arbitrary: base },
    )
  const examples = (s.examples ?? []).filter((e): e is string => typeof e === 'string')
  if (examples.length) base = fc.oneof(base, fc.constantFrom(...examples))
  return base.filter(fits)
}

function fromSchema(raw: Schema, name: string, path: string, g: Gen): fc.Arbitrary<unknown> {
  const s = deref(raw, g)
  if (s.anyOf?.length) return fc.oneof(...s.anyOf.map((x) => fromSchema(x, name, path, g)))
  if (s.enum?.length) return fc.constantFrom(...s.enum)
  const types = Array.isArray(s.type) ? s.type : [s.type ?? (s.properties ? 'object' : 'string')]
  const arbs = types
    .filter((t) => t !== 'null')
    .map((t): fc.Arbitrary<unknown> => {
      switch (t) {
        case 'integer':
          return fc.integer({ min: s.minimum ?? -1000, max: s.maximum ?? 1000 })
        case 'number':
          return fc.double({ min: s.minimum ?? -1000, max: s.maximum ?? 1000, noNaN: true })
        case 'boolean':
          return fc.boolean()
        case 'array':
          return fc.uniqueArray(fromSchema(s.items ?? {}, name, path, g), {
            minLength: s.minItems ?? 0,
            maxLength: Math.min(s.maxItems ?? 3, 3),
            selector: (v) => JSON.stringify(v),
          })
        case 'object':
          return fc.record(
            Object.fromEntries(
              Object.entries(s.properties ?? {}).map(([k, v]) => [k, fromSchema(v, k, path, g)]),
            ),
            { requiredKeys: s.required ?? [] },
          )
        default:
          return stringOf(s, name, path, g)
      }
    })
  const some = arbs.length ? fc.oneof(...arbs) : fc.constant(null)
  return types.includes('null')
    ? fc.oneof({ weight: 6, arbitrary: some }, { weight: 1, arbitrary: fc.constant(null) })
    : some
}

/** Paths of the body's fields (nested objects' fields too), for mutations. */
function fieldPaths(raw: Schema | null, g: Gen, prefix: string[] = []): string[][] {
  const s = raw && deref(raw, g)
  if (!s?.properties) return []
  return Object.entries(s.properties).flatMap(([k, v]) => [
    [...prefix, k],
    ...(prefix.length ? [] : fieldPaths(v, g, [k])),
  ])
}
function setPath(body: unknown, path: string[], v: unknown): unknown {
  const copy: Record<string, unknown> =
    body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Record<string, unknown>) } : {}
  const [head, ...rest] = path
  copy[head!] = rest.length ? setPath(copy[head!], rest, v) : v
  return copy
}

// ---------------------------------------------------------------------------------------------
// Forged cursors

/**
 * A long poll (`wait`, GET /events) answers when an event arrives or after `wait` seconds: the
 * schema cases wait at most LONG_POLL_S, so the run stays short; any case may wait what it asked
 * for (up to the documented 30 s) on top of TIMEOUT_MS.
 */
const LONG_POLL_S = 2
const shortPoll = (p: Parameter): Parameter =>
  p.in === 'query' && p.name === 'wait' ? { ...p, schema: { ...p.schema, maximum: LONG_POLL_S } } : p
const longPollMs = (query: Array<[string, unknown]>) =>
  Math.max(
    0,
    ...query
      .filter(([q]) => q === 'wait')
      .map(([, v]) => Number(v))
      .filter((n) => Number.isInteger(n) && n >= 0 && n <= 30)
      .map((n) => n * 1000),
  )

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64url')
/** The value of a JSON text, or undefined when it is not JSON. */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
const impossibleInstant = fc.constantFrom(
  '2026-02-30T10:00:00Z',
  '2026-02-29T10:00:00.000Z',
  '2026-04-31T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-00-10T00:00:00Z',
  '2026-11-23T24:00:00Z',
  '2026-11-23T23:60:00Z',
  '2026-11-23T23:59:60Z',
  '2026-11-23T10:00:00+23:59',
  '2026-11-23T10:00:00-23:59',
  '2026-11-23T10:00:00+24:00',
  '2026-11-23T10:00:00+99:99',
  '+275760-09-13T00:00:00.000Z',
  '-271821-04-20T00:00:00.000Z',
  '0000-01-01T00:00:00Z',
  '1899-12-31T23:59:59Z',
  '9999-12-31T23:59:59.999Z',
  '2026-11-23',
  '2026-11-23T10:00:00',
  '2026-11-23 10:00:00+00',
  '2026-11-23T10:00:00.123456789Z',
  'infinity',
  '-infinity',
  'epoch',
  'now',
  'allballs',
  '',
  'NaN',
)
const composedInstant = fc
  .record({
    y: fc.integer({ min: 0, max: 10_000 }),
    mo: fc.integer({ min: 0, max: 13 }),
    d: fc.integer({ min: 0, max: 32 }),
    h: fc.integer({ min: 0, max: 25 }),
    mi: fc.integer({ min: 0, max: 61 }),
    s: fc.integer({ min: 0, max: 61 }),
    off: fc.oneof(
      fc.constantFrom('Z', '.999Z', ''),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }))
        .map(([sign, h, m]) => `${sign}${pad(h)}:${pad(m)}`),
    ),
  })
  .map((x) => `${pad(x.y, 4)}-${pad(x.mo)}-${pad(x.d)}T${pad(x.h)}:${pad(x.mi)}:${pad(x.s)}${x.off}`)
const anyInstant = fc.oneof(
  impossibleInstant,
  composedInstant,
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
)
const cursorId = fc.oneof(
  fc.uuid(),
  fc.constantFrom(
    'not-a-uuid',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '0190f0f0-0000-7000-8000-00000000000g',
    '0190f0f000007000800000000000000a',
    "x' OR '1'='1",
    '',
  ),
  fc.string({ maxLength: 40 }),
  fc.integer(),
)
const cursorScalar = fc.oneof(
  anyInstant,
  cursorId,
  fc.constantFrom('a', 'd', 'l', 'c', 'x'),
  fc.integer(),
  fc.double(),
  fc.constantFrom(null, true, 0, -1, 2 ** 53, 2 ** 63, 1e308, -1e308, 0.5, '1', [], {}),
  fc.string({ unit: 'binary', maxLength: 10 }),
)
const forgedArray = fc.oneof(
  fc.tuple(fc.constantFrom('a', 'd', 'c', 'l', 'x'), anyInstant, cursorId),
  fc.tuple(fc.constant('l'), fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), cursorId),
  fc.tuple(anyInstant, cursorId),
  fc.tuple(fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 2 ** 53, 2 ** 63, 1.5, '1', null))),
  fc.array(cursorScalar, { maxLength: 6 }),
)
function cursorArbitrary(real: unknown[][]): fc.Arbitrary<string> {
  const arbs: Array<fc.WeightedArbitrary<string>> = [
    { weight: 8, arbitrary: forgedArray.map((v) => b64(JSON.stringify(v))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => b64(JSON.stringify(v) ?? 'null')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '[1e400]',
          '[-1e400]',
          '[1e-400]',
          '[18446744073709551616]',
          '["c","2026-02-30T10:00:00Z",1e999]',
          '["a","2026-11-23T10:00:00Z","x"',
          '["\\u0000","\\ud800","x"]',
          '"2026-02-30T10:00:00Z"',
          'null',
          '{}',
          '[]',
        )
        .map(b64),
    },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 32 }).map(b64) }, // not UTF-8
    {
      weight: 1,
      arbitrary: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('====', 'a+b/c=', '%00', '..', ' ')),
    },
  ]
  if (real.length) {
    // A real cursor of the list, and the same with one value replaced.
    arbs.push({ weight: 1, arbitrary: fc.constantFrom(...real).map((v) => b64(JSON.stringify(v))) })
    arbs.push({
      weight: 6,
      arbitrary: fc
        .tuple(fc.constantFrom(...real), fc.nat(), fc.oneof(cursorScalar, anyInstant, anyInstant, cursorId))
        .map(([v, i, x]) => b64(JSON.stringify(v.map((y, j) => (j === i % v.length ? x : y))))),
    })
  }
  return fc.oneof(...arbs)
}

// ---------------------------------------------------------------------------------------------
// Cases

function hostileBody(op: Operation): fc.Arbitrary<Payload> {
  const fields = Object.keys(op.body?.properties ?? {})
  const guided = fc
    .dictionary(fc.constantFrom(...(fields.length ? fields : ['x'])), value, { maxKeys: fields.length + 2 })
    .map((b) => ({ body: b }))
  return fc.oneof(
    { weight: 5, arbitrary: guided },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 5 }).map((b) => ({ body: b })) },
    { weight: 1, arbitrary: monster.map((raw) => ({ raw, contentType: 'application/json' })) },
    // Not UTF-8 at all, or cut in the middle of a character.
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ minLength: 1, maxLength: 64 })
        .map((u) => ({ raw: Buffer.from([0xff, 0xfe, ...u]) })),
    },
    {
      weight: 1,
      arbitrary: fc.string({ minLength: 1, maxLength: 12 }).map((s) => ({
        raw: Buffer.concat([Buffer.from(`{"first_name":"${s}`), Buffer.from([0xe2, 0x82])]),
      })),
    },
    { weight: 1, arbitrary: fc.string().map((s) => ({ raw: s, contentType: 'text/plain' })) },
    {
      weight: 1,
      arbitrary: fc.string().map((s) => ({ raw: `{"first_name": "${s}`, contentType: 'application/json' })),
    },
  )
}

const hostileHeaders = fc.record(
  {
    'idempotency-key': fc.stringMatching(/^[\x20-\x7e]{0,300}$/),
    'if-match': fc.stringMatching(/^[\x20-\x7e]{0,40}$/),
    'x-request-id': fc.stringMatching(/^[\x20-\x7e]{0,200}$/),
    'x-idempresa': fc.constantFrom('1', '999999'),
  },
  { requiredKeys: [] },
)

/** The seed of one operation's cases: FUZZ_SEED and the operation, so each is reproducible alone. */
const seedOf = (op: Operation) =>
  [...`${op.method} ${op.path}`].reduce((h, ch) => (Math.imul(h, 31) + ch.charCodeAt(0)) | 0, SEED)

/**
 * CASES_PER_OPERATION cases of every operation, each operation from its own seed, taken in turns
 * (one of each, then the next of each): the deletes are spread over the run, not all before the
 * operations on what they delete.
 */
function casesOf(ops: Operation[], g: Gen): Case[] {
  const perOp = ops.map((op) =>
    fc.sample(operationArbitrary(op, g), { numRuns: CASES_PER_OPERATION, seed: seedOf(op) }),
  )
  return Array.from({ length: CASES_PER_OPERATION }, (_, i) => perOp.map((cases) => cases[i]!)).flat()
}

function operationArbitrary(op: Operation, g: Gen): fc.Arbitrary<Case> {
  {
    const queryParams = op.params.filter((p) => p.in === 'query' && p.name !== 'after')
    const validQuery = fc
      .record(
        Object.fromEntries(queryParams.map((p) => [p.name, fromSchema(p.schema ?? {}, p.name, op.path, g)])),
        { requiredKeys: [] },
      )
      .map((q) => Object.entries(q))
    const validHeaders = fc
      .record(
        {
          'idempotency-key': fc.uuid(),
          'if-match': fc.constantFrom('"1"', '"2"', '"3"', 'W/"1"', '*', '"999"'),
          'x-request-id': fc.stringMatching(/^[A-Za-z0-9-]{8,40}$/),
        },
        { requiredKeys: [] },
      )
      .map((h) => Object.fromEntries(Object.entries(h)))
    const id = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...idsFor('id', op.path, g.pool)) },
      { weight: 1, arbitrary: fc.uuid() },
    )
    const subName = subParam(op.path)
    const sub = subName
      ? fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...idsFor(subName, op.path, g.pool)) },
          { weight: 1, arbitrary: fc.uuid() },
        )
      : fc.constant(undefined)
    const fromBody = op.body && fromSchema(op.body, '', op.path, g)
    const validBody: fc.Arbitrary<Payload> = (
      fromBody && op.example !== undefined
        ? fc.oneof({ weight: 6, arbitrary: fromBody }, { weight: 1, arbitrary: fc.constant(op.example) })
        : (fromBody ?? fc.constant(undefined))
    ).map((body) => (body === undefined ? {} : { body }))
    const paths = fieldPaths(op.body, g)
    const schemaCase = fc.record({
      kind: fc.constant<Kind>('schema'),
      op: fc.constant(op),
      id,
      sub,
      query: validQuery,
      headers: validHeaders,
      payload: validBody,
    })
    const mutated = fc
      .record({
        c: schemaCase,
        where: paths.length && op.method !== 'get' ? fc.constantFrom('body', 'query') : fc.constant('query'),
        field: fc.constantFrom<string[]>(...(paths.length ? paths : [['x']])),
        param: fc.constantFrom(...queryParams.map((p) => p.name), 'codalmacen', 'idempresa', 'x'),
        id: fc.oneof(id, nasty),
        v: value,
      })
      .map(({ c, where, field, param, id: mutatedId, v }): Case => {
        const out = { ...c, kind: 'mutated' as const, id: op.path.includes('{') ? mutatedId : c.id }
        if (where === 'body') return { ...out, payload: { body: setPath(c.payload.body, field, v) } }
        return { ...out, query: [...c.query.filter(([k]) => k !== param), [param, v]] }
      })
    const hostile = fc.record({
      kind: fc.constant<Kind>('hostile'),
      op: fc.constant(op),
      id: fc.oneof(
        fc.uuid(),
        nasty.map((s) => String(s)),
      ),
      sub: subName
        ? fc.oneof(
            sub,
            nasty.map((s) => String(s)),
          )
        : fc.constant(undefined),
      query: fc
        .dictionary(
          fc.oneof(fc.constantFrom(...op.params.map((p) => p.name), 'idempresa', 'codalmacen'), fc.string()),
          nasty,
          {
            maxKeys: 4,
          },
        )
        .map((q) => Object.entries(q)),
      headers: hostileHeaders.map((h) => Object.fromEntries(Object.entries(h))),
      payload: op.method === 'get' ? fc.constant({}) : hostileBody(op),
    })
    const arbs: Array<fc.WeightedArbitrary<Case>> = [
      { weight: 5, arbitrary: schemaCase },
      { weight: 2, arbitrary: mutated },
      { weight: 3, arbitrary: hostile },
    ]
    if (op.list)
      arbs.push({
        weight: 4,
        arbitrary: fc
          .record({ c: schemaCase, after: cursorArbitrary(g.pool.cursors[op.path] ?? []) })
          .map(({ c, after }) => ({
            ...c,
            kind: 'cursor' as const,
            query: [...c.query.filter(([k]) => k !== 'offset'), ['after', after] as [string, unknown]],
          })),
      })
    return fc.oneof(...arbs)
  }
}

/** Percent-encoding that keeps a lone surrogate as its raw (not UTF-8) bytes, as an attacker would. */
function encodePath(s: string): string {
  return [...s]
    .map((ch) => {
      try {
        return encodeURIComponent(ch)
      } catch {
        const u = ch.charCodeAt(0)
        return [0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f)]
          .map((b) => `%${b.toString(16).toUpperCase()}`)
          .join('')
      }
    })
    .join('')
}
const queryString = (q: Array<[string, unknown]>) =>
  new URLSearchParams(
    q.flatMap(([k, v]): Array<[string, string]> =>
      Array.isArray(v) && v.every((x) => typeof x === 'string')
        ? v.map((x) => [k, x])
        : [[k, typeof v === 'string' ? v : JSON.stringify(v)]],
    ),
  ).toString()

// ---------------------------------------------------------------------------------------------
// Raw requests

interface RawCase {
  what: string
  bytes: Buffer
  /** Framing or syntax Node's parser refuses: a closed connection without an answer is allowed. */
  malformed: boolean
  /** A second request hidden behind ambiguous framing: it must never be answered. */
  smuggled: boolean
}

function rawArbitrary(ops: Operation[], g: Gen, token: string, host: string): fc.Arbitrary<RawCase> {
  type Part = { what: string; lines: string[]; malformed?: boolean }
  const none: Part = { what: '', lines: [] }
  const hostPart = fc.constantFrom<Part>(
    { what: 'host', lines: [`Host: ${host}`] },
    { what: 'host', lines: [`Host: ${host}`] },
    { what: 'host', lines: [`Host: ${host}`] },
    { what: 'host', lines: [`Host: ${host}`] },
    { what: 'host-foreign', lines: ['Host: evil.example'] },
    { what: 'host-none', lines: [] },
    { what: 'host-twice', lines: [`Host: ${host}`, 'Host: evil.example'] },
    { what: 'host-empty', lines: ['Host: '] },
    { what: 'host-userinfo', lines: [`Host: ${host}@evil.example`] },
    { what: 'host-ipv6', lines: ['Host: [::1]:99999'] },
    { what: 'host-huge', lines: [`Host: ${'h'.repeat(4000)}.example`] },
    { what: 'host-space', lines: [`Host: ${host} evil.example`] },
  )
  const forwarding = fc.constantFrom<Part>(
    { what: 'xff', lines: ['X-Forwarded-For: 6.6.6.6'] },
    { what: 'xff-list', lines: ['X-Forwarded-For: 6.6.6.6, 10.0.0.1, 127.0.0.1'] },
    { what: 'xff-junk', lines: ['X-Forwarded-For: <script>, unknown, ::1, 999.1.1.1'] },
    { what: 'xff-twice', lines: ['X-Forwarded-For: 6.6.6.6', 'X-Forwarded-For: 7.7.7.7'] },
    { what: 'xfh', lines: ['X-Forwarded-Host: evil.example'] },
    { what: 'xfproto', lines: ['X-Forwarded-Proto: javascript'] },
    { what: 'xfport', lines: ['X-Forwarded-Port: -1'] },
    { what: 'xfprefix', lines: ['X-Forwarded-Prefix: /internal'] },
    { what: 'xrealip', lines: ['X-Real-IP: 6.6.6.6'] },
    { what: 'xoriginal', lines: ['X-Original-URL: /internal/patients'] },
    { what: 'xrewrite', lines: ['X-Rewrite-URL: /api/audit/events'] },
    { what: 'forwarded', lines: ['Forwarded: for=6.6.6.6;host=evil.example;proto=https'] },
    { what: 'forwarded-v6', lines: ['Forwarded: for="[2001:db8::1]:4711", for=unknown'] },
    { what: 'forwarded-junk', lines: ['Forwarded: for=;;;===,,,"'] },
    { what: 'assertion', lines: ['X-Clinic-Assertion: v1.eyJjb21wYW55SWQiOjF9.forged'] },
    { what: 'tenant', lines: ['X-Idempresa: 1', 'X-Tenant-Id: 1'] },
    { what: 'override', lines: ['X-HTTP-Method-Override: DELETE'] },
  )
  const injection = fc.constantFrom<Part>(
    { what: 'crlf-assertion', lines: ['X-Request-Id: abc\r\nX-Clinic-Assertion: v1.forged.sig'] },
    { what: 'crlf-tenant', lines: ['X-Request-Id: abc\r\nX-Idempresa: 1'] },
    { what: 'crlf-xff', lines: ['User-Agent: fuzz\r\nX-Forwarded-For: 6.6.6.6'] },
    { what: 'bare-cr', lines: ['X-Request-Id: abc\rX-Injected: 1'], malformed: true },
    { what: 'bare-lf', lines: ['X-Request-Id: abc\nX-Injected: 1'], malformed: true },
    { what: 'nul', lines: ['X-Request-Id: a\u0000b'], malformed: true },
    { what: 'obs-fold', lines: ['X-Request-Id: abc', ' X-Injected: 1'], malformed: true },
    { what: 'space-colon', lines: ['X-Request-Id : abc'], malformed: true },
    { what: 'bad-name', lines: ['X(Id): 1'], malformed: true },
    { what: 'empty-name', lines: [': 1'], malformed: true },
    { what: 'latin1', lines: ['X-Request-Id: caf\u00e9\u00ff'] },
    {
      what: 'early-end',
      lines: ['X-Request-Id: abc\r\n\r\nGET /api/health HTTP/1.1\r\nHost: x'],
      malformed: true,
    },
    { what: 'huge-header', lines: [`X-Big: ${'b'.repeat(20_000)}`], malformed: true },
  )
  const target = fc.oneof(
    fc
      .constantFrom(...ops)
      .chain((op) =>
        fc
          .constantFrom(...idsFor('id', op.path, g.pool))
          .map((id) => ({ method: op.method.toUpperCase(), path: `/api${pathOf(op, id)}`, op })),
      ),
  )
  const odd = fc.constantFrom(
    { what: 'absolute-form', line: 'GET http://evil.example/api/patients HTTP/1.1', malformed: false },
    { what: 'http10', line: 'GET /api/patients HTTP/1.0', malformed: false },
    { what: 'http2-line', line: 'GET /api/patients HTTP/2.0', malformed: false },
    { what: 'http09', line: 'GET /api/patients', malformed: true },
    { what: 'lower-method', line: 'get /api/patients HTTP/1.1', malformed: true },
    { what: 'bad-method', line: 'GE(T /api/patients HTTP/1.1', malformed: true },
    { what: 'trace', line: 'TRACE /api/patients HTTP/1.1', malformed: false },
    { what: 'dot-segments', line: 'GET /api/../api/%2e%2e/internal/patients HTTP/1.1', malformed: false },
    { what: 'double-slash', line: 'GET //api//patients HTTP/1.1', malformed: false },
    { what: 'crlf-in-path', line: 'GET /api/patients/%0d%0aX-Injected:%201 HTTP/1.1', malformed: false },
    { what: 'asterisk', line: 'OPTIONS * HTTP/1.1', malformed: false },
  )
  const framing = fc.constantFrom(
    'cl-twice-same',
    'cl-twice-different',
    'cl-list',
    'cl-negative',
    'cl-plus',
    'cl-huge',
    'te-cl',
    'cl-te',
    'te-twice',
    'te-chunked-not-last',
    'te-gzip-chunked',
    'te-unknown',
    'te-identity-cl',
    'chunk-bad-size',
    'chunk-extension',
    'chunk-lf-only',
    'expect-continue',
  )
  return fc
    .record({
      t: target,
      host: hostPart,
      fwd: fc.array(forwarding, { maxLength: 3 }),
      // What the case is about; the other parts stay plain (forwarding headers and Host vary always).
      focus: fc.constantFrom(
        'forwarding',
        'forwarding',
        'forwarding',
        'injection',
        'injection',
        'odd',
        'framing',
        'framing',
      ),
      inj: injection,
      odd,
      framing,
      body: fc.constantFrom(
        '{}',
        `{"notes":"${MARK}"}`,
        `{"first_name":"${MARK}","last_name":"Raw","birth_date":"1990-01-01","codalmacen":"ALM1"}`,
      ),
      auth: fc.constantFrom(true, true, true, false),
    })
    .map(({ t, host: h, fwd, focus, auth, body, ...x }) => {
      const inj = focus === 'injection' ? x.inj : none
      const o = focus === 'odd' ? x.odd : { what: '', line: null, malformed: false }
      const f = focus === 'framing' ? x.framing : 'normal'
      const withBody = t.method !== 'GET' || f !== 'normal'
      const n = Buffer.byteLength(body)
      const smuggle = 'GET /api/patients HTTP/1.1\r\nHost: x\r\nX-Injected: 1\r\n\r\n'
      const chunked = `${n.toString(16)}\r\n${body}\r\n0\r\n\r\n`
      let framingLines: string[] = []
      let payload = ''
      let malformed = f !== 'normal' && !['te-gzip-chunked', 'chunk-extension', 'expect-continue'].includes(f)
      let smuggled = false
      if (withBody)
        switch (f) {
          case 'cl-twice-same':
            ;[framingLines, payload] = [[`Content-Length: ${n}`, `Content-Length: ${n}`], body]
            break
          case 'cl-twice-different':
            ;[framingLines, payload] = [[`Content-Length: ${n}`, `Content-Length: ${n + 5}`], `${body}     `]
            break
          case 'cl-list':
            ;[framingLines, payload] = [[`Content-Length: ${n}, ${n}`], body]
            break
          case 'cl-negative':
            ;[framingLines, payload] = [['Content-Length: -1'], body]
            break
          case 'cl-plus':
            ;[framingLines, payload] = [[`Content-Length: +${n}`], body]
            break
          case 'cl-huge':
            ;[framingLines, payload] = [['Content-Length: 99999999999999999999999'], body]
            break
          case 'te-cl':
            payload = chunked + smuggle
            framingLines = ['Transfer-Encoding: chunked', `Content-Length: ${Buffer.byteLength(payload)}`]
            smuggled = true
            break
          case 'cl-te':
            payload = chunked + smuggle
            framingLines = [`Content-Length: ${Buffer.byteLength(chunked)}`, 'Transfer-Encoding: chunked']
            smuggled = true
            break
          case 'te-twice':
            ;[framingLines, payload] = [['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], chunked]
            break
          case 'te-chunked-not-last':
            ;[framingLines, payload] = [['Transfer-Encoding: chunked, identity'], chunked]
            break
          case 'te-gzip-chunked':
            ;[framingLines, payload] = [['Transfer-Encoding: gzip, chunked'], chunked]
            break
          case 'te-unknown':
            ;[framingLines, payload] = [['Transfer-Encoding: xchunked'], chunked]
            break
          case 'te-identity-cl':
            ;[framingLines, payload] = [['Transfer-Encoding: identity', `Content-Length: ${n}`], body]
            break
          case 'chunk-bad-size':
            ;[framingLines, payload] = [['Transfer-Encoding: chunked'], `zz\r\n${body}\r\n0\r\n\r\n`]
            break
          case 'chunk-extension':
            ;[framingLines, payload] = [
              ['Transfer-Encoding: chunked'],
              `${n.toString(16)};a=b\r\n${body}\r\n0\r\n\r\n`,
            ]
            break
          case 'chunk-lf-only':
            ;[framingLines, payload] = [['Transfer-Encoding: chunked'], `${n.toString(16)}\n${body}\n0\n\n`]
            break
          case 'expect-continue':
            ;[framingLines, payload] = [['Expect: 100-continue', `Content-Length: ${n}`], body]
            break
          default:
            ;[framingLines, payload] = [[`Content-Length: ${n}`], body]
        }
      else malformed = false
      malformed ||= Boolean(inj.malformed) || o.malformed
      const lines = [
        o.line ?? `${t.method} ${t.path} HTTP/1.1`,
        // First, so that a header section cut short by an injection still closes the connection.
        'Connection: close',
        ...h.lines,
        ...(auth ? [`X-Service-Token: ${token}`] : []),
        ...fwd.flatMap((p) => p.lines),
        ...inj.lines,
        ...(withBody ? ['Content-Type: application/json', ...framingLines] : []),
      ]
      const what = [
        t.method,
        t.op.path,
        h.what,
        ...fwd.map((p) => p.what),
        inj.what,
        o.what,
        withBody ? f : '',
      ]
        .filter(Boolean)
        .join(' ')
      return {
        what,
        bytes: Buffer.from(`${lines.join('\r\n')}\r\n\r\n${payload}`, 'latin1'),
        malformed,
        smuggled,
      }
    })
}

// ---------------------------------------------------------------------------------------------
// Public routes: provider callbacks and pages for people

/** A request without an API token to what the gateway forwards without one. */
interface PublicCase {
  what: string
  method: string
  /** From the gateway's root (`/p/...`) for a page, from `/api` for a callback. */
  path: string
  page: boolean
  headers: Record<string, string>
  payload: Payload
}

/**
 * Requests to the public routes the API operations' loop leaves aside: the provider callbacks of
 * the document (`security: []` with a form body: Twilio's status callback and incoming SMS, checked
 * by signature) and the pages of services.json `pages`, which the document does not list (a
 * reminder's patient link `/p/a/<token>` and an email's one-click unsubscribe `/p/u/<token>`).
 * Tokens are arbitrary (with MARK: a token is a credential, never logged), altered, real (signed
 * with the stack's COMMS_LINK_SECRET as the reminder worker and the mailer sign them, for the fuzz
 * tenant's appointments and email), and signed with hostile payloads or for the other purpose;
 * bodies are forms, other media types, bytes that are not UTF-8, too large.
 */
function publicArbitrary(
  callbacks: Operation[],
  g: Gen,
  link: { secret: string; companyId: number; emailMessage: string; apiToken: string },
): fc.Arbitrary<PublicCase> {
  const future = Math.floor(Date.now() / 1000) + 365 * 86_400
  // A link token as comms makes one (platform links/tokens.ts: an HS256 JWT whose audience is the purpose),
  // by RFC 7515's own steps: fast-check maps synchronously, and jose signs only asynchronously.
  const sign = (purpose: 'appointment' | 'unsubscribe', payload: unknown) => {
    const claims =
      payload && typeof payload === 'object' && !Array.isArray(payload)
        ? { ...payload, aud: `clinic-link:${purpose}` }
        : payload
    const input = `${b64(JSON.stringify({ alg: 'HS256', typ: LINK_TYPE }))}.${b64(JSON.stringify(claims) ?? 'null')}`
    return `${input}.${createHmac('sha256', link.secret).update(input).digest('base64url')}`
  }
  const ours = <T>(mine: fc.Arbitrary<T>) =>
    fc.oneof({ weight: 4, arbitrary: mine }, { weight: 1, arbitrary: value })
  const appointmentPayload = fc.record(
    {
      id: ours(fc.uuid()),
      companyId: ours(fc.constant(link.companyId)),
      appointmentId: ours(fc.oneof(fc.constantFrom(...g.pool.appointments), fc.uuid())),
      lang: ours(fc.constantFrom('es', 'en', 'fr', '')),
      exp: ours(fc.constantFrom(future, future, 0, -1, 2 ** 53, 1e308)),
    },
    { requiredKeys: ['id', 'companyId', 'appointmentId', 'exp'] },
  )
  const unsubscribePayload = fc.record(
    {
      companyId: ours(fc.constant(link.companyId)),
      messageId: ours(fc.oneof(fc.constantFrom(link.emailMessage, ...g.pool.messages), fc.uuid())),
      lang: ours(fc.constantFrom('es', 'en', 'de', '')),
    },
    { requiredKeys: ['companyId', 'messageId'] },
  )
  const alter = (token: string) =>
    fc.oneof(
      fc.nat().map((i) => {
        const at = i % token.length
        return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`
      }),
      fc.nat().map((i) => token.slice(0, i % token.length)),
      fc.constantFrom(
        `${token}.x`,
        `${token}.`,
        token.replace('.', ''),
        `${token}${token}`,
        token + 'A'.repeat(1100),
      ),
    )
  const tokenOf = (purpose: 'appointment' | 'unsubscribe') => {
    const other = purpose === 'appointment' ? 'unsubscribe' : 'appointment'
    const payload = purpose === 'appointment' ? appointmentPayload : unsubscribePayload
    const real = payload.map((p) => sign(purpose, p))
    return fc.oneof(
      { weight: 4, arbitrary: real },
      { weight: 3, arbitrary: real.chain(alter) },
      // A real token of the other purpose, and signed JSON of any shape.
      {
        weight: 1,
        arbitrary: (purpose === 'appointment' ? unsubscribePayload : appointmentPayload).map((p) =>
          sign(other, p),
        ),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((p) => sign(purpose, p)) },
      {
        weight: 2,
        arbitrary: fc.oneof(
          nasty.map((x) => `${MARK}${x}`),
          fc.tuple(nasty, nasty).map(([x, y]) => `${MARK}${b64(String(x))}.${b64(String(y))}`),
          fc.constantFrom(`${MARK}..`, `${MARK}.%2e%2e/%2e%2e/api/patients`, `${MARK}/../../api/patients`),
        ),
      },
    )
  }
  const languages = fc.oneof(
    fc.constantFrom('es', 'en-GB,en;q=0.9', 'fr', '*', '', 'en;q=abc, es;q=-1', 'x'.repeat(2000)),
    fc.stringMatching(/^[\x20-\x7e]{0,100}$/),
  )
  const formBody = (fields: string[], valueOf: (field: string) => fc.Arbitrary<unknown>) =>
    fc
      .dictionary(
        fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: fc.string() }),
        fc.constant(null),
        {
          maxKeys: fields.length + 1,
        },
      )
      .chain((d) =>
        fc.tuple(...Object.keys(d).map((k) => valueOf(k).map((v) => [k, String(v)] as [string, string]))),
      )
      .map((pairs) => new URLSearchParams(pairs).toString())
  const otherBodies: fc.Arbitrary<Payload> = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }).map((b) => ({ body: b })),
    fc.string().map((raw) => ({ raw, contentType: 'text/plain' })),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((u) => ({
      raw: Buffer.from([0xff, 0xfe, ...u]),
      contentType: 'application/x-www-form-urlencoded',
    })),
    fc.constantFrom<Payload>(
      { raw: `action=${'x'.repeat(2000)}`, contentType: 'application/x-www-form-urlencoded' },
      { raw: `action=${'x'.repeat(70_000)}`, contentType: 'application/x-www-form-urlencoded' },
      { raw: 'action=confirm&action=cancel', contentType: 'application/x-www-form-urlencoded' },
      { raw: 'action=%E2%82&%00=%00', contentType: 'application/x-www-form-urlencoded' },
      {
        raw: '--b\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--b--\r\n',
        contentType: 'multipart/form-data; boundary=b',
      },
      { raw: '--b\r\nContent-Disposition: form-data', contentType: 'multipart/form-data; boundary=b' },
      { raw: 'action=confirm', contentType: 'application/x-www-form-urlencoded; charset=utf-16' },
    ),
  )
  const pageBody = fc.oneof(
    {
      weight: 4,
      arbitrary: formBody(['action', 'List-Unsubscribe'], (k) =>
        k === 'action'
          ? fc.oneof(fc.constantFrom('confirm', 'cancel', 'Confirm', ''), nasty)
          : fc.oneof(fc.constant('One-Click'), nasty),
      ).map((raw) => ({ raw, contentType: 'application/x-www-form-urlencoded' })),
    },
    { weight: 2, arbitrary: otherBodies },
    { weight: 1, arbitrary: fc.constant<Payload>({}) },
  )
  const page = fc
    .record({
      family: fc.constantFrom('a', 'u'),
      method: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE'),
      odd: fc.constantFrom(false, false, false, false, false, false, true),
      language: fc.option(languages, { nil: undefined }),
      withToken: fc.constantFrom(false, false, false, true),
    })
    .chain(({ family, method, odd, language, withToken }) =>
      fc
        .record({
          token: tokenOf(family === 'a' ? 'appointment' : 'unsubscribe'),
          oddPath: fc.constantFrom(
            `/p/${family}`,
            `/p/${family}/`,
            '/p/',
            '/p/x/abc',
            `/p/${family}/%00`,
            `/p/${family}/a%2Fb`,
          ),
          payload: method === 'GET' ? fc.constant<Payload>({}) : pageBody,
        })
        .map(({ token, oddPath, payload }): PublicCase => ({
          what: `${method} /p/${family}/<token>${odd ? ` (${oddPath})` : ''}`,
          method,
          path: odd ? oddPath : `/p/${family}/${encodePath(token)}`,
          page: true,
          headers: {
            ...(language === undefined ? {} : { 'accept-language': language }),
            // An API token is no authority here (the link is): the gateway forwards no assertion.
            ...(withToken ? { 'x-service-token': link.apiToken } : {}),
          },
          payload,
        })),
    )
  const callbackCases = callbacks.map((op) => {
    const fields = Object.keys(deref(op.body ?? {}, g).properties ?? {})
    const valueOf = (k: string): fc.Arbitrary<unknown> =>
      k === 'Body'
        ? fc.oneof(fc.constantFrom('STOP', ' baja ', 'Cancelar!', 'START', 'alta', 'hola'), nasty)
        : k === 'From' || k === 'To'
          ? fc.oneof(fc.constantFrom('+34600111222', '+34803123456', ''), nasty)
          : k === 'MessageStatus'
            ? fc.oneof(fc.constantFrom('delivered', 'undelivered', 'failed', 'sent'), nasty)
            : fc.oneof(fc.stringMatching(/^(SM|AC)[0-9a-f]{32}$/), nasty)
    return fc
      .record({
        payload: fc.oneof(
          {
            weight: 4,
            arbitrary: formBody(fields, valueOf).map((raw) => ({
              raw,
              contentType: 'application/x-www-form-urlencoded',
            })),
          },
          { weight: 2, arbitrary: otherBodies },
          { weight: 1, arbitrary: fc.constant<Payload>({}) },
        ),
        signature: fc.option(
          fc.oneof(
            fc.uint8Array({ minLength: 20, maxLength: 20 }).map((u) => Buffer.from(u).toString('base64')),
            fc.stringMatching(/^[\x20-\x7e]{0,100}$/),
          ),
          { nil: undefined },
        ),
        query: fc.option(fc.dictionary(fc.string({ maxLength: 10 }), nasty, { maxKeys: 2 }), {
          nil: undefined,
        }),
      })
      .map(({ payload, signature, query }): PublicCase => {
        const qs = query ? queryString(Object.entries(query)) : ''
        return {
          what: `POST ${op.path}`,
          method: 'POST',
          path: `${op.path}${qs ? `?${qs}` : ''}`,
          page: false,
          headers: signature === undefined ? {} : { 'x-twilio-signature': signature },
          payload,
        }
      })
  })
  return fc.oneof({ weight: 3, arbitrary: page }, ...callbackCases)
}

// ---------------------------------------------------------------------------------------------

let t: Tenant
let api: string
let stop: () => Promise<void>
let pool: Pool
/** Where the fuzz tenant's webhook endpoints post: a receiver in this process that answers 204. */
let receiver: Server | undefined
beforeAll(async () => {
  t = await makeTenant(['ALM1', 'ALM2'])
  // A gateway of its own whose limits do not hide answers behind 429.
  ;({ api, stop } = await extraGateway({
    RATE_LIMIT_PER_MINUTE: '100000000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
  }))
  const made = async (path: string, body: unknown) => {
    const res = await call('POST', path, { base: api, token: t.token, body, timeoutMs: TIMEOUT_MS })
    if (res.status >= 300) throw new Error(`setup ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return (res.body as { id: string }).id
  }
  // Webhook endpoints first, so that the records made below give them deliveries.
  receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve))
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  const endpoints: string[] = []
  // Two types only: the patients made below (one per center, one company-wide) give each endpoint
  // deliveries (real ids for the delivery routes) without every fuzzed write fanning out to three.
  const event_types = ['patient.created', 'practitioner.created']
  for (const codalmacen of ['ALM1', 'ALM2', null])
    endpoints.push(await made('/webhooks/endpoints', { url: hook, event_types, codalmacen }))
  const patients: string[] = []
  for (const [i, codalmacen] of ['ALM1', 'ALM2', null].entries())
    patients.push(
      await made('/patients', {
        first_name: `${MARK} Ana`,
        last_name: `Fuzz ${i}`,
        birth_date: '1980-01-01',
        codalmacen,
        email: `${MARK.toLowerCase()}.${i}@example.test`,
        phone: '+34600111222',
      }),
    )
  const appointments: string[] = []
  for (const [i, patient] of patients.entries())
    appointments.push(
      await made('/appointments', {
        patient_id: patient,
        codalmacen: i % 2 ? 'ALM2' : 'ALM1',
        practitioner: `dra-fuzz-${i}`,
        starts_at: `2031-11-0${i + 1}T09:00:00Z`,
        ends_at: `2031-11-0${i + 1}T09:30:00Z`,
      }),
    )
  const messages = [
    await made('/comms/send', { patient_id: patients[0], body: `${MARK} hola` }),
    await made('/comms/send', { patient_id: patients[1], channel: 'sms', body: `${MARK} hola` }),
  ]
  // Registered practitioners working every day at one center, 06:00-22:00 UTC (around the schema
  // cases' instants, so bookings and holds get to the calendar), each with a time off and a hold.
  const practitioners: string[] = []
  const timeOffs: string[] = []
  const holds: string[] = []
  for (const [i, codalmacen] of ['ALM1', 'ALM2'].entries()) {
    const id = await made('/practitioners', {
      id: `fuzz-${i}-${MARK.toLowerCase()}`,
      name: `${MARK} Dra ${i}`,
      time_zone: 'UTC',
      slot_minutes: 15,
      working_hours: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({
        codalmacen,
        weekday,
        start: '06:00',
        end: '22:00',
      })),
    })
    practitioners.push(id)
    timeOffs.push(
      await made(`/practitioners/${id}/time-off`, {
        starts_at: `2031-10-0${i + 1}T12:00:00Z`,
        ends_at: `2031-10-0${i + 1}T13:00:00Z`,
        reason: `${MARK} vacaciones`,
      }),
    )
    holds.push(
      await made('/appointments/holds', {
        practitioner: id,
        codalmacen,
        starts_at: `2031-10-0${i + 1}T07:00:00Z`,
        ends_at: `2031-10-0${i + 1}T07:15:00Z`,
      }),
    )
  }
  // A delivery of each endpoint (the records above made events), for the delivery operations.
  const deliveries = await waitFor(
    async () => {
      const found: string[] = []
      for (const e of endpoints) {
        const res = await call('GET', `/webhooks/endpoints/${e}/deliveries?limit=2`, {
          base: api,
          token: t.token,
          timeoutMs: TIMEOUT_MS,
        })
        found.push(...((res.body as { data?: Array<{ id: string }> }).data ?? []).map((d) => d.id))
      }
      return found.length >= endpoints.length ? found : null
    },
    { what: 'deliveries of the fuzz endpoints', timeoutMs: 180_000, intervalMs: 250 },
  )
  pool = {
    patients,
    appointments,
    messages,
    practitioners,
    timeOffs,
    holds,
    endpoints,
    deliveries,
    centers: t.centers,
    cursors: {},
  }
}, 300_000)
afterAll(async () => {
  await stop?.()
  receiver?.closeAllConnections()
  await new Promise((resolve) => receiver?.close(resolve) ?? resolve(undefined))
})

test(
  `${CASES_PER_OPERATION} requests to every operation, ${RAW_CASES} raw ones and ${PUBLIC_CASES} to public routes: never a 5xx, never a hang`,
  async () => {
    const doc = await fetchDocument(api)
    // The long poll's wait kept short in the schema cases.
    const ops: Operation[] = apiOperations(doc).map((o) => ({ ...o, params: o.params.map(shortPoll) }))
    // Real cursors of each list, so forged ones can be the real ones with one value replaced.
    for (const op of ops.filter((o) => o.list))
      for (const sort of [undefined, ...(op.params.find((p) => p.name === 'sort')?.schema?.anyOf ?? [])]) {
        const s = sort?.enum?.[0]
        const res = await call('GET', `${op.path}?limit=1${s ? `&sort=${String(s)}` : ''}`, {
          base: api,
          token: t.token,
          timeoutMs: TIMEOUT_MS,
        })
        const next = (res.body as { meta?: { next?: string | null } })?.meta?.next
        // The keyset cursors are base64url JSON arrays; the change feed's is a text of its own (`feed.<n>`).
        const decoded = next ? jsonOf(Buffer.from(next, 'base64url').toString()) : undefined
        if (Array.isArray(decoded)) (pool.cursors[op.path] ??= []).push(decoded)
      }
    // The provider callbacks: public (`security: []`), signature-checked, a form body.
    const callbacks = callbackOperations(doc)
    expect(callbacks.map((c) => c.path).sort()).toEqual([
      '/comms/webhooks/twilio',
      '/comms/webhooks/twilio/inbound',
    ])
    const g: Gen = { pool, doc }
    const started = Date.now()
    const cases = casesOf(ops, g)
    const { host } = new URL(api)
    const raws = fc.sample(rawArbitrary(ops, g, t.token, host), { numRuns: RAW_CASES, seed: SEED + 1 })
    const publics = fc.sample(
      publicArbitrary(callbacks, g, {
        secret: stack().env.COMMS_LINK_SECRET!,
        companyId: t.companyId,
        emailMessage: pool.messages[0]!,
        apiToken: t.token,
      }),
      { numRuns: PUBLIC_CASES, seed: SEED + 2 },
    )
    const sampledMs = Date.now() - started

    const failures: string[] = []
    const fivexx = new Map<string, string>()
    const seen = new Map<number, number>()
    const kinds: Record<string, Record<string, number>> = {}
    /** Per operation: its cases, and how many a 2xx answered (they reached the domain and did something). */
    const byOp = new Map(
      ops.map((o) => [`${o.method} ${o.path}`, { cases: 0, ok: 0, statuses: {} as Record<number, number> }]),
    )
    let maxMs = 0
    /** The case that took maxMs: where to look when the bound comes near. */
    let slowest = ''
    let hangs = 0
    let next = 0
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!
        const path = pathOf(c.op, c.id, c.sub)
        const qs = queryString(c.query)
        const caseStarted = Date.now()
        const polls = longPollMs(c.query)
        let status = 0
        let problem: unknown
        try {
          const res = await call(c.op.method.toUpperCase(), `${path}${qs ? `?${qs}` : ''}`, {
            base: api,
            token: t.token,
            headers: c.headers,
            timeoutMs: TIMEOUT_MS + polls,
            ...c.payload,
          })
          status = res.status
          problem = res.body
          if (
            status >= 400 &&
            !(res.headers.get('content-type') ?? '').startsWith('application/problem+json')
          )
            failures.push(`${c.op.method} ${path}: ${status} without problem+json`)
          if (status >= 400 && typeof (problem as { code?: unknown })?.code !== 'string')
            failures.push(`${c.op.method} ${path}: ${status} without a code`)
        } catch (err) {
          if ((err as Error).name === 'TimeoutError') hangs++
          failures.push(
            `${c.op.method} ${path}: no answer in ${Date.now() - caseStarted} ms (${(err as Error).message}; ${String((err as Error).cause ?? '')})`,
          )
        }
        // The time beyond a long poll's wait.
        if (Date.now() - caseStarted - polls > maxMs) {
          maxMs = Date.now() - caseStarted - polls
          slowest = `${c.kind} ${c.op.method} ${c.op.path} ${status}`
        }
        seen.set(status, (seen.get(status) ?? 0) + 1)
        const op = byOp.get(`${c.op.method} ${c.op.path}`)!
        op.cases++
        op.statuses[status] = (op.statuses[status] ?? 0) + 1
        if (status >= 200 && status < 300) op.ok++
        const k = (kinds[c.kind] ??= {})
        const klass = status ? `${String(status)[0]}xx` : 'none'
        k[klass] = (k[klass] ?? 0) + 1
        k.ms = (k.ms ?? 0) + Date.now() - caseStarted
        if (status >= 500 || status === 0) {
          const after = c.query.find(([q]) => q === 'after')?.[1]
          const input = `${c.kind} ${c.op.method} ${path}?${qs.slice(0, 200)}${
            typeof after === 'string'
              ? ` after=${Buffer.from(after, 'base64url').toString().slice(0, 120)}`
              : ''
          } body=${JSON.stringify(c.payload.body ?? c.payload.raw ?? null)?.slice(0, 150)}`
          fivexx.set(`${c.op.method} ${c.op.path} (${c.kind})`, input)
          failures.push(`${input}: ${status} ${String(JSON.stringify(problem)).slice(0, 200)}`)
        }
      }
    }
    // Raw requests, a few at a time, alongside.
    const rawSeen = new Map<string, number>()
    let rawNext = 0
    let rawMaxMs = 0
    /** Answered without `Connection: close` although the request said `Connection: close`. */
    const keptOpen = new Set<string>()
    const rawWorker = async () => {
      while (rawNext < raws.length) {
        const r = raws[rawNext++]!
        const a = await rawExchange(api, r.bytes, TIMEOUT_MS)
        rawMaxMs = Math.max(rawMaxMs, a.ms)
        const final = a.statuses.filter((s) => s >= 200)
        const key = final.length ? final.join('+') : a.timedOut ? 'hang' : 'closed'
        rawSeen.set(key, (rawSeen.get(key) ?? 0) + 1)
        const fail = (why: string) => failures.push(`raw ${r.what}: ${why} (${a.text.slice(0, 120)})`)
        if (a.timedOut) {
          hangs++
          fail(`no answer and not closed within ${TIMEOUT_MS} ms`)
        } else if (!final.length && !r.malformed) fail('closed without an answer')
        if (final.some((s) => s >= 500)) {
          fail(`answered ${final.join(', ')}`)
          fivexx.set(`raw ${r.what}`, r.bytes.toString('latin1').slice(0, 300))
        }
        if (a.statuses.some((s) => s < 200 && s !== 100)) fail(`status ${a.statuses.join(', ')}`)
        if (r.smuggled && final.length > 1) fail('the smuggled request was answered')
        if (a.complete && !a.headers.some(([n, v]) => n === 'connection' && /close/i.test(v)))
          keptOpen.add(r.what.split(' ').slice(0, 2).join(' '))
        if (a.headers.some(([name]) => name === 'x-injected')) fail('an injected header came back')
      }
    }
    // Public routes, a few at a time, alongside: pages from the gateway's root, callbacks under /api.
    const root = api.replace(/\/api$/, '')
    const publicSeen = new Map<string, number>()
    let publicNext = 0
    let publicMaxMs = 0
    const publicWorker = async () => {
      while (publicNext < publics.length) {
        const c = publics[publicNext++]!
        const caseStarted = Date.now()
        const input = `public ${c.method} ${c.path.slice(0, 200)} headers=${JSON.stringify(c.headers).slice(0, 100)} body=${JSON.stringify(c.payload.body ?? c.payload.raw?.toString() ?? null)?.slice(0, 150)}`
        let status = 0
        try {
          const res = await call(c.method, c.path, {
            base: c.page ? root : api,
            headers: c.headers,
            timeoutMs: TIMEOUT_MS,
            ...c.payload,
          })
          status = res.status
          const type = res.headers.get('content-type') ?? ''
          const code = (res.body as { code?: unknown } | undefined)?.code
          const problem = type.startsWith('application/problem+json') && typeof code === 'string'
          // A page is HTML, sent with the pages' headers (no script, not cached); what the gateway
          // refuses before the service (413, 415, an unknown method) is a problem, as everywhere.
          const page =
            type.startsWith('text/html') &&
            /default-src 'none'/.test(res.headers.get('content-security-policy') ?? '') &&
            res.headers.get('cache-control') === 'no-store'
          if (status >= 500 || status < 200 || (status >= 300 && status < 400)) {
            fivexx.set(`public ${c.what}`, input)
            failures.push(`${input}: ${status} ${String(JSON.stringify(res.body)).slice(0, 200)}`)
          } else if (c.page && !(page || (status >= 400 && problem)))
            failures.push(`${input}: ${status} ${type}, neither a page nor a problem`)
          else if (!c.page && status >= 400 && !problem)
            failures.push(`${input}: ${status} without a problem`)
        } catch (err) {
          if ((err as Error).name === 'TimeoutError') hangs++
          failures.push(`${input}: no answer in ${Date.now() - caseStarted} ms (${(err as Error).message})`)
        }
        publicMaxMs = Math.max(publicMaxMs, Date.now() - caseStarted)
        const key = `${c.page ? 'page' : 'callback'}:${status}`
        publicSeen.set(key, (publicSeen.get(key) ?? 0) + 1)
      }
    }
    let rawMs = 0
    await Promise.all([
      ...Array.from({ length: CONCURRENCY }, worker),
      Promise.all(Array.from({ length: 4 }, rawWorker)).then(
        () => (rawMs = Date.now() - started - sampledMs),
      ),
      ...Array.from({ length: 2 }, publicWorker),
    ])
    const httpMs = Date.now() - started - sampledMs

    // The logs the stack's processes wrote, if the stack keeps them somewhere readable.
    const logFiles = Object.values((stack() as { logFiles?: Record<string, string> }).logFiles ?? {}).filter(
      (f) => existsSync(f),
    )
    const logHits = logFiles.filter((f) => readFileSync(f, 'utf8').includes(MARK))

    const count = (k: Kind) =>
      Object.entries(kinds[k] ?? {})
        .filter(([key]) => key !== 'ms')
        .reduce((n, [, x]) => n + x, 0)
    // Mean milliseconds per case of each kind, instead of the sum.
    for (const k of Object.keys(kinds) as Kind[]) kinds[k]!.ms = Math.round(kinds[k]!.ms! / count(k))
    const total5xx = [...seen].filter(([s]) => s >= 500).reduce((n, [, k]) => n + k, 0)
    const n400 = seen.get(400) ?? 0
    process.stdout.write(
      `fuzz: seed=${SEED} cases=${cases.length} operations=${ops.length} schema=${count('schema')} mutated=${count('mutated')} hostile=${count('hostile')} cursor=${count('cursor')} raw=${raws.length} ` +
        `400_share=${((100 * n400) / cases.length).toFixed(1)}% 5xx=${total5xx} hangs=${hangs} max_ms=${maxMs} slowest=${JSON.stringify(slowest)} raw_max_ms=${rawMaxMs} ` +
        `logs=${logFiles.length ? `${logFiles.length}_files_${logHits.length}_with_marker` : 'unreachable'} ` +
        `ms=sample:${sampledMs},requests:${httpMs},raw_done_at:${rawMs} ` +
        `statuses=${JSON.stringify(Object.fromEntries([...seen].sort(([a], [b]) => a - b)))} kinds=${JSON.stringify(kinds)} ` +
        `raw_statuses=${JSON.stringify(Object.fromEntries(rawSeen))} public=${publics.length} public_max_ms=${publicMaxMs} ` +
        `public_statuses=${JSON.stringify(Object.fromEntries([...publicSeen].sort()))}\n`,
    )
    const perOp = [...byOp.values()].map((o) => o.cases)
    const never2xx = [...byOp]
      .filter(([, o]) => o.ok === 0)
      .map(([k, o]) => `${k} ${JSON.stringify(o.statuses)}`)
    process.stdout.write(
      `fuzz coverage: operations=${byOp.size} cases_per_operation=${Math.min(...perOp)}..${Math.max(...perOp)} ` +
        `operations_with_2xx=${byOp.size - never2xx.length} without_2xx=${JSON.stringify(never2xx)}\n`,
    )
    if (keptOpen.size)
      process.stdout.write(
        `fuzz answered keep-alive to Connection: close: ${[...keptOpen].sort().join(', ')}\n`,
      )
    if (failures.length)
      process.stdout.write(`fuzz failures (${failures.length}):\n  ${failures.slice(0, 40).join('\n  ')}\n`)
    if (fivexx.size)
      process.stdout.write(`fuzz 5xx:\n${[...fivexx].map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`)
    expect(failures.slice(0, 20)).toEqual([])
    // Every operation of the document had its cases.
    expect(perOp).toEqual(ops.map(() => CASES_PER_OPERATION))
    expect(hangs).toBe(0)
    expect(maxMs).toBeLessThan(TIMEOUT_MS)
    expect(rawMaxMs).toBeLessThan(TIMEOUT_MS)
    expect(publicMaxMs).toBeLessThan(TIMEOUT_MS)
    // Every process's log was read (none is missing or empty), and none holds a value sent.
    expect(logFiles.map((f) => readFileSync(f, 'utf8').length > 0)).toEqual(
      Object.keys(stack().processes).map(() => true),
    )
    expect(logHits).toEqual([])
  },
  TEST_LIMIT_MS,
)

/**
 * Multipart garbage against every upload operation (a POST whose body the document gives as
 * multipart/form-data): no boundary, another boundary than the body's, parts cut short, a part
 * header line of 100 KB, too many parts, random bytes, a file part with no name. Each is a 4xx
 * problem+json with a `code`, never a 5xx or a hang, and none leaves a document behind.
 */
test('multipart garbage to every upload: a 4xx each, nothing stored', async () => {
  const doc = await fetchDocument(api)
  const uploads = Object.entries(doc.paths).filter(
    ([, m]) => m.post?.requestBody?.content['multipart/form-data'],
  )
  expect(uploads.map(([p]) => p)).toEqual(['/documents'])
  const patient = await call('POST', '/patients', {
    base: api,
    token: t.token,
    body: { first_name: 'Fuzz', last_name: 'Multipart', birth_date: '1970-01-01' },
  })
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  )
  const b = 'fuzzboundary'
  const field = (name: string, value: string) =>
    `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  const good = Buffer.concat([
    Buffer.from(field('patient_id', patient.body.id) + field('category', 'other')),
    Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n`),
    png,
    Buffer.from(`\r\n--${b}--\r\n`),
  ])
  const type = `multipart/form-data; boundary=${b}`
  const cases: Array<[string, string | Buffer, string]> = [
    ['no boundary', good, 'multipart/form-data'],
    ['another boundary', good, 'multipart/form-data; boundary=other'],
    ['cut in the file', good.subarray(0, good.length - 40), type],
    ['cut in a header', good.subarray(0, 30), type],
    ['no closing delimiter', good.subarray(0, good.length - `--${b}--\r\n`.length), type],
    [
      'a 100 KB header line',
      `--${b}\r\nContent-Disposition: form-data; name="x"\r\nX-Long: ${'a'.repeat(100_000)}\r\n\r\nv\r\n--${b}--\r\n`,
      type,
    ],
    ['500 parts', `${field('title', 'x').repeat(500)}--${b}--\r\n`, type],
    ['random bytes', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)), type],
    ['a file part without a name', good.toString('latin1').replace('name="file"; ', ''), type],
    ['only the closing delimiter', `--${b}--\r\n`, type],
  ]
  const failures: string[] = []
  for (const [name, raw, contentType] of cases) {
    const res = await call('POST', '/documents', {
      base: api,
      token: t.token,
      raw,
      contentType,
      timeoutMs: TIMEOUT_MS,
    })
    const code = (res.body as { code?: unknown })?.code
    if (res.status < 400 || res.status >= 500 || typeof code !== 'string')
      failures.push(`${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
  }
  expect(failures).toEqual([])
  const list = await call('GET', `/documents?patient_id=${patient.body.id}`, { base: api, token: t.token })
  expect(list.body.meta.total).toBe(0)
})
