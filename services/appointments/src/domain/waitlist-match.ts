import type { Slot } from '../schemas/availability'
import { wallAt, wallText } from './series-zone'
import type { Candidate } from './waitlist-store'

/** The local ISO weekday (1 Monday) and "HH:MM" of an instant in `zone`. */
export function localDayTime(at: Date, zone: string): { day: number; time: string } {
  const wall = wallAt(at.getTime(), zone)
  return { day: new Date(wall).getUTCDay() || 7, time: wallText(wall).slice(11) }
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
