import fc from 'fast-check'
import { companyOf, startApp, type Company, type Harness } from '../helpers'
import {
  addDays,
  availability,
  iso,
  manualClock,
  newPractitioner,
  overlaps,
  zoned,
  type SlotJson,
} from './calendar-fixtures'

/**
 * Property: for random working hours, time off, bookings (some outside the hours on
 * purpose, some cancelled) and holds (some expired) over one week, availability answers exactly
 * the free slot grid: (a) no slot overlaps a booking that holds its slot, a live hold or time
 * off, (b) every free grid slot is there, in order. The grid is computed here, in plain TypeScript
 * with Intl, from the hours alone; what each write answers (201, 409, 422) is checked against the
 * same model. Europe/Madrid in a week with no daylight-saving change, each run on a new company.
 *
 * A failure prints fast-check's seed and counterexample; AVAILABILITY_SEED=<seed> replays it,
 * AVAILABILITY_RUNS sets the number of runs.
 */

const ZONE = 'Europe/Madrid'
const MONDAY = '2031-06-09'
const T0 = Date.parse('2031-06-01T00:00:00Z')
const TTL_SECONDS = 300
const SEED = Number(process.env.AVAILABILITY_SEED ?? 20310609)
const RUNS = Number(process.env.AVAILABILITY_RUNS ?? 30)
const UNITS_PER_DAY = 288 // 5-minute units
const WEEK_UNITS = 7 * UNITS_PER_DAY
const CENTERS = ['ALM1', 'ALM2'] as const

const clock = manualClock(iso(T0))
let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6, clock: clock.now, holdTtlSeconds: TTL_SECONDS })
})
afterAll(() => h.close())

// ---- the model: local wall time (5-minute units) to instants, with Intl -------------------------

const hhmm = (unit: number) =>
  `${String(Math.floor(unit / 12)).padStart(2, '0')}:${String((unit % 12) * 5).padStart(2, '0')}`
/** The instant of 5-minute unit `unit` of local day `day` (0 = Monday) of the week. */
const instantOf = (day: number, unit: number) => zoned(addDays(MONDAY, day), hhmm(unit), ZONE)

interface Window {
  codalmacen: (typeof CENTERS)[number]
  weekday: number
  start: number
  end: number
}

/** Non-overlapping windows of one weekday from gaps and lengths (in units), cut at 24:00. */
function windowsOf(weekday: number, parts: Array<{ gap: number; len: number; alm2: boolean }>): Window[] {
  const out: Window[] = []
  let at = 0
  for (const { gap, len, alm2 } of parts) {
    const start = at + gap
    const end = start + len
    if (end > UNITS_PER_DAY) break
    out.push({ codalmacen: alm2 ? 'ALM2' : 'ALM1', weekday, start, end })
    at = end
  }
  return out
}

const windowArb = fc.record({
  gap: fc.integer({ min: 0, max: 96 }),
  len: fc.integer({ min: 1, max: 96 }),
  alm2: fc.boolean(),
})
const practitionerArb = fc.record({
  slot: fc.constantFrom(5, 10, 15, 20, 25, 30, 45, 60),
  active: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  days: fc.array(fc.array(windowArb, { maxLength: 3 }), { minLength: 7, maxLength: 7 }),
  timeOff: fc.array(
    fc.record({
      start: fc.integer({ min: 0, max: 7 * UNITS_PER_DAY - 1 }),
      len: fc.integer({ min: 1, max: 72 }),
    }),
    { maxLength: 2 },
  ),
})
/** Where a booking or hold aims: a grid-ish time inside a window, or anywhere in the week. */
const aimArb = fc.record({
  who: fc.nat(),
  day: fc.integer({ min: 0, max: 6 }),
  inWindow: fc.oneof(
    { weight: 4, arbitrary: fc.constant(true) },
    { weight: 1, arbitrary: fc.constant(false) },
  ),
  // Near the start of one of the first windows, so that writes meet each other.
  a: fc.nat({ max: 3 }),
  b: fc.nat({ max: 11 }),
  at: fc.nat({ max: UNITS_PER_DAY - 1 }),
  len: fc.integer({ min: 1, max: 12 }),
})
const scenarioArb = fc.record({
  practitioners: fc.array(practitionerArb, { minLength: 1, maxLength: 3 }),
  expiredHolds: fc.array(aimArb, { maxLength: 4 }),
  bookings: fc.array(fc.record({ aim: aimArb, outsideHours: fc.boolean(), cancel: fc.boolean() }), {
    maxLength: 8,
  }),
  holds: fc.array(aimArb, { maxLength: 5 }),
  duration: fc.option(fc.constantFrom(5, 10, 20, 35, 60, 90), { nil: undefined, freq: 2 }),
  only: fc.option(fc.nat(), { nil: undefined, freq: 2 }),
  // The asked range (default the whole week) and the clock when asking (default before the week;
  // inside it, the past and the holds that expired meanwhile drop out).
  range: fc.option(
    fc.record({ start: fc.nat({ max: WEEK_UNITS - 1 }), len: fc.integer({ min: 1, max: WEEK_UNITS }) }),
    { nil: undefined, freq: 2 },
  ),
  askedAt: fc.option(fc.record({ unit: fc.nat({ max: WEEK_UNITS }), seconds: fc.constantFrom(0, 1, 150) }), {
    nil: undefined,
    freq: 3,
  }),
})
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never
type Aim = Scenario['holds'][number]

interface Span {
  practitioner: string
  codalmacen: string
  start: number
  end: number
}
/** What takes time: an appointment that holds its slot, or a hold until it expires. */
type Claim = Span & { expires?: number }
const live = (claims: Claim[]) => claims.filter((c) => c.expires === undefined || c.expires > clock.ms)
interface Model {
  ids: string[]
  active: boolean[]
  slot: number[]
  windows: Window[][]
  timeOff: Array<Array<[number, number]>>
}

function modelOf(s: Scenario): Model {
  return {
    ids: s.practitioners.map((_, i) => `dra-p${i}`),
    active: s.practitioners.map((p) => p.active),
    slot: s.practitioners.map((p) => p.slot),
    windows: s.practitioners.map((p) => p.days.flatMap((parts, d) => windowsOf(d + 1, parts))),
    timeOff: s.practitioners.map((p) =>
      p.timeOff.map(({ start, len }) => {
        const from = instantOf(Math.floor(start / UNITS_PER_DAY), start % UNITS_PER_DAY)
        return [from, from + len * 5 * 60_000] as [number, number]
      }),
    ),
  }
}

/** The span an aim names: from near the start of one of the practitioner's windows, or anywhere. */
function spanOf(m: Model, aim: Aim): Span {
  const p = aim.who % m.ids.length
  const windows = m.windows[p]!
  const w = windows[aim.a % Math.max(windows.length, 1)]
  if (aim.inWindow && w) {
    const start = instantOf(w.weekday - 1, w.start + (aim.b % (w.end - w.start)))
    return { practitioner: m.ids[p]!, codalmacen: w.codalmacen, start, end: start + aim.len * 5 * 60_000 }
  }
  const start = instantOf(aim.day, aim.at)
  return { practitioner: m.ids[p]!, codalmacen: 'ALM1', start, end: start + aim.len * 5 * 60_000 }
}

const windowInstants = (w: Window, day: number): [number, number] => [
  instantOf(day, w.start),
  instantOf(day, w.end),
]
const indexOf = (m: Model, practitioner: string) => m.ids.indexOf(practitioner)

/** Where a span stands with the hours: wholly inside one window at its center, wholly outside all, or neither. */
function hoursOf(m: Model, s: Span): 'inside' | 'outside' | 'straddles' {
  const p = indexOf(m, s.practitioner)
  let touches = false
  for (let day = -1; day <= 7; day++)
    for (const w of m.windows[p]!) {
      if (w.codalmacen !== s.codalmacen || w.weekday !== (((day % 7) + 7) % 7) + 1) continue
      const [w0, w1] = windowInstants(w, day)
      if (w0 <= s.start && s.end <= w1) return 'inside'
      if (overlaps(w0, w1, s.start, s.end)) touches = true
    }
  return touches ? 'straddles' : 'outside'
}

const inTimeOff = (m: Model, s: Span) =>
  m.timeOff[indexOf(m, s.practitioner)]!.some(([t0, t1]) => overlaps(t0, t1, s.start, s.end))

interface Query {
  from: number
  to: number
  duration?: number
  only?: string[]
}

/** The free grid of one center in [from, to), sorted by start then practitioner. */
function expectedSlots(m: Model, center: string, claims: Claim[], { from, to, ...o }: Query) {
  const out: SlotJson[] = []
  const taken = live(claims)
  m.ids.forEach((id, p) => {
    if (!m.active[p] || (o.only && !o.only.includes(id))) return
    const length = (o.duration ?? m.slot[p]!) * 60_000
    for (let day = -1; day <= 14; day++)
      for (const w of m.windows[p]!) {
        if (w.codalmacen !== center || w.weekday !== (((day % 7) + 7) % 7) + 1) continue
        const [w0, w1] = windowInstants(w, day)
        for (let t = w0; t + length <= w1; t += m.slot[p]! * 60_000) {
          if (t < from || t >= to || t < clock.ms) continue
          const busy =
            taken.some((c) => c.practitioner === id && overlaps(c.start, c.end, t, t + length)) ||
            m.timeOff[p]!.some(([t0, t1]) => overlaps(t0, t1, t, t + length))
          if (!busy)
            out.push({ practitioner: id, codalmacen: center, starts_at: iso(t), ends_at: iso(t + length) })
        }
      }
  })
  return out.sort((a, b) =>
    a.starts_at === b.starts_at
      ? a.practitioner < b.practitioner
        ? -1
        : 1
      : a.starts_at < b.starts_at
        ? -1
        : 1,
  )
}

// ---- the run -----------------------------------------------------------------------------------

const body = (s: Span) => ({
  practitioner: s.practitioner,
  codalmacen: s.codalmacen,
  starts_at: iso(s.start),
  ends_at: iso(s.end),
})
const collides = (claims: Span[], s: Span) =>
  claims.some((c) => c.practitioner === s.practitioner && overlaps(c.start, c.end, s.start, s.end))

/**
 * What a write of `s` must answer: 422 for a practitioner who does not work then (holds have no
 * override), else 409 when a live claim overlaps, else 201. A span across two windows is left open
 * (the contract does not say whether adjacent windows join).
 */
function expectedStatus(m: Model, s: Span, claims: Claim[], override: boolean): number[] {
  const free = collides(live(claims), s) ? 409 : 201
  if (override) return [free]
  if (!m.active[indexOf(m, s.practitioner)] || inTimeOff(m, s)) return [422]
  const hours = hoursOf(m, s)
  if (hours === 'outside') return [422]
  return hours === 'inside' ? [free] : [422, free]
}

async function write(
  c: Company,
  m: Model,
  url: string,
  s: Span,
  claims: Span[],
  extra: Record<string, unknown>,
) {
  const res = await c.send('POST', url, { ...body(s), ...extra })
  const allowed = expectedStatus(m, s, claims, extra.outside_hours === true)
  if (!allowed.includes(res.statusCode))
    throw new Error(
      `POST ${url} ${JSON.stringify(body(s))} ${JSON.stringify(extra)}: expected ${allowed.join(' or ')}, got ${res.statusCode} ${res.body}`,
    )
  return res
}

/** The range at a center: one request when it fits in 500 slots, else a day at a time. */
async function slotsAt(c: Company, center: string, q: Query) {
  const query = { codalmacen: center, duration: q.duration, practitioner: q.only, limit: 500 }
  const all = await availability(c, { ...query, from: iso(q.from), to: iso(q.to) })
  if (all.length < 500) return all
  const days: SlotJson[] = []
  for (let from = q.from; from < q.to; from += 86_400_000) {
    const to = Math.min(from + 86_400_000, q.to)
    const one = await availability(c, { ...query, from: iso(from), to: iso(to) })
    expect(one.length).toBeLessThan(500)
    days.push(...one)
  }
  return days
}

async function run(s: Scenario) {
  const c = companyOf(h)
  const m = modelOf(s)
  clock.set(T0)
  for (const [p, id] of m.ids.entries()) {
    await newPractitioner(c, {
      id,
      time_zone: ZONE,
      slot_minutes: m.slot[p],
      active: m.active[p],
      working_hours: m.windows[p]!.map((w) => ({ ...w, start: hhmm(w.start), end: hhmm(w.end) })),
    })
    for (const [t0, t1] of m.timeOff[p]!) {
      const res = await c.send('POST', `/practitioners/${id}/time-off`, {
        starts_at: iso(t0),
        ends_at: iso(t1),
      })
      if (res.statusCode !== 201) throw new Error(`time off: ${res.statusCode} ${res.body}`)
    }
  }

  // Holds that will have expired: they claim time now, and nothing once the clock moves on.
  const early: Span[] = []
  for (const aim of s.expiredHolds) {
    const span = spanOf(m, aim)
    if ((await write(c, m, '/appointments/holds', span, early, {})).statusCode === 201) early.push(span)
  }
  clock.set(T0 + TTL_SECONDS * 1000 + 60_000)

  const claims: Claim[] = []
  for (const { aim, outsideHours, cancel } of s.bookings) {
    const span = spanOf(m, aim)
    const extra = { patient_id: c.newPatient(), ...(outsideHours ? { outside_hours: true } : {}) }
    const res = await write(c, m, '/appointments', span, claims, extra)
    if (res.statusCode !== 201) continue
    if (!cancel) {
      claims.push(span)
      continue
    }
    const cancelled = await c.send('PATCH', `/appointments/${res.json().id}`, {
      status: 'cancelled',
      cancellation_reason: 'prueba',
    })
    if (cancelled.statusCode !== 200) throw new Error(`cancel: ${cancelled.statusCode} ${cancelled.body}`)
  }
  for (const aim of s.holds) {
    const span = spanOf(m, aim)
    const res = await write(c, m, '/appointments/holds', span, claims, {})
    if (res.statusCode !== 201) continue
    const expires = Date.parse(res.json().expires_at)
    expect(expires).toBe(clock.ms + TTL_SECONDS * 1000)
    claims.push({ ...span, expires })
  }

  if (s.askedAt) clock.set(instantOf(0, 0) + s.askedAt.unit * 5 * 60_000 + s.askedAt.seconds * 1000)
  const from = instantOf(0, 0) + (s.range?.start ?? 0) * 5 * 60_000
  const query: Query = {
    from,
    to: s.range ? from + s.range.len * 5 * 60_000 : instantOf(7, 0),
    duration: s.duration,
    only: s.only === undefined ? undefined : [m.ids[s.only % m.ids.length]!],
  }
  for (const center of CENTERS) {
    const got = await slotsAt(c, center, query)
    // (a) nothing taken is offered.
    const taken = got.filter(
      (x) =>
        collides(live(claims), { ...x, start: Date.parse(x.starts_at), end: Date.parse(x.ends_at) }) ||
        inTimeOff(m, { ...x, start: Date.parse(x.starts_at), end: Date.parse(x.ends_at) }),
    )
    // (b) every free grid slot is offered, nothing else, in order.
    const want = expectedSlots(m, center, claims, query)
    const key = (x: SlotJson) => `${x.starts_at} ${x.practitioner} ${x.ends_at}`
    const wanted = new Set(want.map(key))
    const gotKeys = new Set(got.map(key))
    expect({
      center,
      taken,
      unexpected: got.filter((x) => !wanted.has(key(x))),
      missing: want.filter((x) => !gotKeys.has(key(x))),
    }).toEqual({ center, taken: [], unexpected: [], missing: [] })
    expect(got).toEqual(want)
  }
}

test('availability is exactly the free slot grid, for random hours, time off, bookings and holds', async () => {
  await fc.assert(fc.asyncProperty(scenarioArb, run), { seed: SEED, numRuns: RUNS, endOnFailure: true })
})
