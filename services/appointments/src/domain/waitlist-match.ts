import type { Slot } from '../schemas/availability'
import type { Candidate } from './waitlist-store'

const formats = new Map<string, Intl.DateTimeFormat>()
const ISO_DAY: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 }

/** The local ISO weekday (1 Monday) and "HH:MM" of an instant in `zone`. */
export function localDayTime(at: Date, zone: string): { day: number; time: string } {
  let f = formats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
    formats.set(zone, f)
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]))
  return { day: ISO_DAY[parts.weekday!]!, time: `${parts.hour}:${parts.minute}` }
}

/**
 * Whether a slot is one the entry can come to (DESIGN.md section 20): its start within
 * [earliest, latest], on one of its days and in its times (local, in the entry's zone).
 */
export function fitsEntry(e: Candidate, s: Slot): boolean {
  const start = Date.parse(s.starts_at)
  if (e.earliest && start < Date.parse(e.earliest)) return false
  if (e.latest && start > Date.parse(e.latest)) return false
  if (!e.days && !e.times) return true
  const local = localDayTime(new Date(s.starts_at), e.time_zone)
  if (e.days && !e.days.includes(local.day)) return false
  return !e.times || (local.time >= e.times.from && local.time < e.times.to)
}
