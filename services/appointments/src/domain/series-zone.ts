import type { FieldError } from '@clinic/platform/core'
import { EARLIEST_INSTANT, LATEST_INSTANT } from './rules'

/**
 * Local wall time of a series (DESIGN.md section 20) and the instants it names. A wall time is
 * kept "floating": the milliseconds of that date and time read as UTC (`Date.UTC(...)`), which is
 * also how rrule expands a rule without a zone. The zone's rules are the runtime's (Intl: ICU's
 * tz database), as comms' reminders read them; no offset is computed by hand beyond comparing
 * what Intl says.
 */

const DAY_MS = 86_400_000
const formats = new Map<string, Intl.DateTimeFormat>()
function formatIn(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone)
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
    })
    formats.set(zone, f)
  }
  return f
}

/** The wall clock of `zone` at instant `t` (floating ms). */
export function wallAt(t: number, zone: string): number {
  const p: Record<string, number> = {}
  for (const part of formatIn(zone).formatToParts(t)) p[part.type] = Number(part.value)
  const ms = ((t % 1000) + 1000) % 1000
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) + ms
}

/** The zone's UTC offset at instant `t`, in ms (east positive). */
const offsetAt = (t: number, zone: string) => wallAt(t, zone) - t

/**
 * The instant at which `zone` reads wall time `wall`. As RFC 5545 (3.3.5) reads a DATE-TIME with a
 * TZID: a wall time that occurs twice (the autumn change) is its first occurrence; one that does
 * not occur (in the spring-forward gap) is read with the offset before the gap, so 02:30 on a night
 * that jumps from 02:00 to 03:00 is 03:30.
 */
export function instantOf(wall: number, zone: string): number {
  const before = offsetAt(wall - DAY_MS, zone)
  const after = offsetAt(wall + DAY_MS, zone)
  // The larger offset gives the earlier instant: tried first.
  for (const offset of before >= after ? [before, after] : [after, before])
    if (offsetAt(wall - offset, zone) === offset) return wall - offset
  return wall - before
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/** `2027-03-22T09:30`: a wall time as a series shows it (its `start`). */
export function wallText(wall: number): string {
  const d = new Date(wall)
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
}

/** The local date `YYYY-MM-DD` of a wall time. */
export const wallDate = (wall: number): string => wallText(wall).slice(0, 10)

/** The wall time of a local date at "HH:MM". */
export function wallOn(date: string, time: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number]
  const [hh, mm] = time.split(':').map(Number) as [number, number]
  return Date.UTC(y, m - 1, d, hh, mm)
}

/** `+01:00` for 3,600,000 ms. */
export function offsetText(ms: number): string {
  const minutes = Math.round(Math.abs(ms) / 60_000)
  return `${ms < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`
}

const START = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.0{1,9})?)?(Z|z|[+-]\d\d:\d\d)?$/

export interface ParsedStart {
  wall: number
  /** The offset the client sent with it (ms), if any: it must be the zone's at that time. */
  offsetMs?: number
}

/**
 * A series' `start`: a local date and time, `YYYY-MM-DDTHH:MM` or `...:SS` (seconds 00), in the
 * series' zone. An offset (`+01:00`, `Z`) may follow if it is the zone's own then (checked with the
 * zone: zoneOffsetError).
 */
export function parseStart(text: string): ParsedStart | { error: string } {
  const m = START.exec(text)
  if (!m) return { error: 'must be a local date and time, YYYY-MM-DDTHH:MM (e.g. 2027-03-22T09:30)' }
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((v) => Number(v ?? 0)) as number[]
  const wall = Date.UTC(y!, mo! - 1, d!, h!, mi!)
  if (wallText(wall) !== `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}` || y! < 1000)
    return { error: 'is not a real date and time' }
  if (s !== 0) return { error: 'must be on the minute (seconds 00)' }
  if (wall < Date.parse(EARLIEST_INSTANT) || wall >= Date.parse(LATEST_INSTANT) - 2 * 366 * DAY_MS)
    return { error: 'must be between 1900 and 2197' }
  const zone = m[7]
  if (zone === undefined) return { wall }
  if (zone === 'Z' || zone === 'z') return { wall, offsetMs: 0 }
  const sign = zone.startsWith('-') ? -1 : 1
  return { wall, offsetMs: sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000 }
}

/** The 400 of a `start` whose offset is not the zone's at that wall time, else null. */
export function zoneOffsetError(start: ParsedStart, zone: string): FieldError | null {
  if (start.offsetMs === undefined) return null
  const offset = offsetAt(instantOf(start.wall, zone), zone)
  if (offset === start.offsetMs) return null
  return {
    path: '/start',
    message: `is local time in ${zone}, whose offset then is ${offsetText(offset)}, not ${offsetText(start.offsetMs)}: send the local time without an offset`,
  }
}
