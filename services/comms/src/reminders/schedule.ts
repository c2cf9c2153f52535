/**
 * When a reminder is due, in the appointment's own time zone (DESIGN.md section 12): the days of
 * an offset are calendar days there (`P1D` before 10:00 is 10:00 the day before, across a DST
 * change too), its hours and minutes are elapsed time; quiet hours move a reminder to the last
 * minute before they begin. Pure functions over Intl (no time zone tables of our own).
 */

export interface QuietHours {
  /** `HH:MM`, local time. */
  start: string
  end: string
}

const DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?)?$/

/** `P1D`, `PT2H`, `P1DT12H`, `P2W`: calendar days and elapsed milliseconds; null if not one. */
export function parseOffset(iso: string): { days: number; ms: number } | null {
  const m = DURATION.exec(iso)
  if (!m || iso === 'P' || iso.endsWith('T')) return null
  const [w, d, h, min] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number]
  return { days: w * 7 + d, ms: (h * 60 + min) * 60_000 }
}

const formats = new Map<string, Intl.DateTimeFormat>()
function formatOf(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    formats.set(timeZone, f)
  }
  return f
}

interface Wall {
  year: number
  month: number
  day: number
  hour: number
  minute: number
}

/** The wall-clock time at `t` in `timeZone`. */
export function wallTime(t: number, timeZone: string): Wall & { second: number } {
  const p: Record<string, number> = {}
  for (const part of formatOf(timeZone).formatToParts(t))
    if (part.type !== 'literal') p[part.type] = Number(part.value)
  return { year: p.year!, month: p.month!, day: p.day!, hour: p.hour!, minute: p.minute!, second: p.second! }
}

/** How far `timeZone` is ahead of UTC at `t`, in milliseconds. */
function offsetAt(t: number, timeZone: string): number {
  const w = wallTime(t, timeZone)
  const whole = t - (((t % 1000) + 1000) % 1000)
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - whole
}

/**
 * The instant a wall-clock time names in `timeZone`. A time skipped by a DST change (02:30 on the
 * spring-forward night) is read with the offset before it (03:30 summer time); a repeated one
 * (the autumn night) is its first occurrence.
 */
export function zonedInstant(w: Wall, timeZone: string): number {
  const wall = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute)
  const before = offsetAt(wall - 86_400_000, timeZone)
  const after = offsetAt(wall + 86_400_000, timeZone)
  // Try the earlier offset (the larger one in autumn is the earlier occurrence) first.
  for (const o of before >= after ? [before, after] : [after, before]) {
    const t = wall - o
    if (offsetAt(t, timeZone) === o) return t
  }
  return wall - before
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5))

/** The instant `offset` before `startsAt`: its days on the local calendar, the rest elapsed. */
export function dueAt(startsAt: Date, offset: { days: number; ms: number }, timeZone: string): Date {
  const w = wallTime(startsAt.getTime(), timeZone)
  const dayEarlier = new Date(Date.UTC(w.year, w.month - 1, w.day - offset.days))
  const local = zonedInstant(
    {
      year: dayEarlier.getUTCFullYear(),
      month: dayEarlier.getUTCMonth() + 1,
      day: dayEarlier.getUTCDate(),
      hour: w.hour,
      minute: w.minute,
    },
    timeZone,
  )
  return new Date(local + (startsAt.getTime() % 60_000) - offset.ms)
}

/** The local day `days` after the wall date of `w`, at `minutes` past midnight, as an instant. */
function localAt(w: Wall, days: number, minutes: number, timeZone: string): number {
  const day = new Date(Date.UTC(w.year, w.month - 1, w.day + days))
  return zonedInstant(
    {
      year: day.getUTCFullYear(),
      month: day.getUTCMonth() + 1,
      day: day.getUTCDate(),
      hour: Math.floor(minutes / 60),
      minute: minutes % 60,
    },
    timeZone,
  )
}

/**
 * The quiet hours `t` falls in (local time): when they began and when they end; null outside them.
 * Quiet hours that wrap midnight (22:00-08:00) began the evening before a time after midnight, and
 * end the next morning for a time before it.
 */
function quietSpanAt(t: Date, quiet: QuietHours, timeZone: string): { began: number; ends: number } | null {
  const start = minutesOf(quiet.start)
  const end = minutesOf(quiet.end)
  const w = wallTime(t.getTime(), timeZone)
  const m = w.hour * 60 + w.minute
  const wraps = start > end
  const inside = wraps ? m >= start || m < end : m >= start && m < end
  if (!inside) return null
  const began = localAt(w, wraps && m < end ? -1 : 0, start, timeZone)
  let ends = localAt(w, wraps && m >= start ? 1 : 0, end, timeZone)
  // In the hour a DST change repeats, the end's wall time read as its first occurrence can be past:
  // the minutes left to it on the wall clock are then elapsed time (the change is behind us).
  if (ends <= t.getTime()) ends = t.getTime() - (t.getTime() % 60_000) + ((end - m + 1440) % 1440) * 60_000
  return { began, ends }
}

/**
 * `due` moved out of quiet hours: unchanged outside them; inside, the last minute before the
 * quiet hours it falls in began (local time).
 */
export function outOfQuietHours(due: Date, quiet: QuietHours | null, timeZone: string): Date {
  const span = quiet ? quietSpanAt(due, quiet, timeZone) : null
  return span ? new Date(span.began - 60_000) : due
}

/**
 * The first instant at or after `at` outside quiet hours: `at` itself outside them; inside, the
 * moment they end (local time). What a message that must not wait for a reminder's slot does (a
 * waitlist offer): it goes out as soon as it may.
 */
export function afterQuietHours(at: Date, quiet: QuietHours | null, timeZone: string): Date {
  const span = quiet ? quietSpanAt(at, quiet, timeZone) : null
  return span ? new Date(span.ends) : at
}
