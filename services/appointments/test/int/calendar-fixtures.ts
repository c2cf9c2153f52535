import { gatewayHeaders } from '@clinic/platform/testing'
import type { Company, Harness } from '../helpers'

/**
 * What the practitioner, availability and hold tests share: a clock the tests move by
 * hand, local wall time turned into instants and back with Intl (independently of the service's
 * SQL), and small request helpers.
 */

export interface SlotJson {
  practitioner: string
  codalmacen: string
  starts_at: string
  ends_at: string
}

/** The app's clock (startApp({ clock })): holds expire and "the past" moves only when a test says so. */
export function manualClock(start: string) {
  let now = Date.parse(start)
  return {
    now: () => new Date(now),
    get ms() {
      return now
    },
    set(at: string | number) {
      now = typeof at === 'number' ? at : Date.parse(at)
    },
    advance(ms: number) {
      now += ms
    },
  }
}
export type ManualClock = ReturnType<typeof manualClock>

const wallFormat = new Map<string, Intl.DateTimeFormat>()
function formatIn(zone: string) {
  let f = wallFormat.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'short',
    })
    wallFormat.set(zone, f)
  }
  return f
}

const ISO_WEEKDAY: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 }

/** The wall clock of `zone` at instant `t`: local date, "HH:MM", ISO weekday and UTC offset in minutes. */
export function localOf(t: number | string, zone: string) {
  const ms = typeof t === 'string' ? Date.parse(t) : t
  const parts = Object.fromEntries(
    formatIn(zone)
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  )
  const wall = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  )
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    time: `${parts.hour}:${parts.minute}`,
    weekday: ISO_WEEKDAY[parts.weekday!]!,
    offsetMinutes: (wall - (ms - (((ms % 1000) + 1000) % 1000))) / 60_000,
  }
}

/**
 * The instant of local `date` ("YYYY-MM-DD") at `time` ("HH:MM", "24:00" for the next midnight) in
 * `zone`, for a wall time that exists (not inside a spring-forward gap).
 */
export function zoned(date: string, time: string, zone: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number]
  const [hh, mm] = time.split(':').map(Number) as [number, number]
  const wall = Date.UTC(y, m - 1, d, hh, mm)
  let t = wall - localOf(wall, zone).offsetMinutes * 60_000
  t = wall - localOf(t, zone).offsetMinutes * 60_000
  return t
}

export const iso = (t: number) => new Date(t).toISOString()

/** `date` plus `days` calendar days ("YYYY-MM-DD"). */
export function addDays(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number]
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10)
}

let practitioners = 0
/** Registers a practitioner (fails the test on anything but 201); a new slug unless `id` is given. */
export async function newPractitioner(c: Company, body: Record<string, unknown> = {}) {
  const res = await c.send('POST', '/practitioners', {
    id: `dra-ficticia-${++practitioners}`,
    name: 'Dra. Ficticia',
    ...body,
  })
  if (res.statusCode !== 201) throw new Error(`practitioner not created: ${res.statusCode} ${res.body}`)
  return res.json() as { id: string; time_zone: string; slot_minutes: number; version: number }
}

/** Working hours on every day in `weekdays` at one center. */
export const everyDay = (start: string, end: string, codalmacen = 'ALM1', weekdays = [1, 2, 3, 4, 5, 6, 7]) =>
  weekdays.map((weekday) => ({ codalmacen, weekday, start, end }))

/** The query string of an availability request; arrays repeat the parameter. */
export function availabilityUrl(q: Record<string, string | number | string[] | undefined>): string {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) params.append(k, String(one))
  }
  return `/appointments/availability?${params.toString()}`
}

/** GET /appointments/availability; fails the test on anything but 200. */
export async function availability(
  c: Company,
  q: Record<string, string | number | string[] | undefined>,
): Promise<SlotJson[]> {
  const res = await c.send('GET', availabilityUrl({ codalmacen: 'ALM1', ...q }))
  if (res.statusCode !== 200) throw new Error(`availability: ${res.statusCode} ${res.body}`)
  return (res.json() as { data: SlotJson[] }).data
}

/** A DELETE as the gateway would send it (the platform's injectAs speaks GET, POST and PATCH). */
export const remove = async (h: Harness, c: Company, url: string) =>
  h.app.inject({ method: 'DELETE', url, headers: await gatewayHeaders(c.principal, 'DELETE', url) })

/** The key of the advisory lock the repository takes on a practitioner's calendar. */
export const practitionerLockKey = (companyId: number, practitioner: string) =>
  `appointments:${companyId}:practitioner:${practitioner}`

/** How many sessions wait for the advisory lock of `key` (pg_locks splits the bigint key in two). */
export async function waitersOn(h: Harness, key: string): Promise<number> {
  const { rows } = await h.owner.raw<{ rows: Array<{ n: number }> }>(
    `SELECT count(*)::int AS n
     FROM pg_locks l, (SELECT hashtextextended(?, 0) AS k) x
     WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid::bigint = ((x.k >> 32) & 4294967295) AND l.objid::bigint = (x.k & 4294967295)`,
    [key],
  )
  return rows[0]!.n
}

/** Half-open ranges [a0, a1) and [b0, b1) share an instant. */
export const overlaps = (a0: number, a1: number, b0: number, b1: number) => a0 < b1 && b0 < a1
