import { readFileSync, statSync } from 'node:fs'

export type Clock = () => Date

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `+2d`, `-90m`, `+1h30m`, `3600000` (milliseconds): the offset a clock file holds. */
export function parseOffset(text: string): number {
  const t = text.trim()
  if (/^[+-]?\d+$/.test(t)) return Number(t)
  const m = /^([+-]?)((?:\d+(?:ms|s|m|h|d))+)$/.exec(t)
  if (!m) throw new Error(`not a clock offset: ${JSON.stringify(t.slice(0, 40))} (e.g. +2d, -90m, +1h30m)`)
  let ms = 0
  for (const [, n, unit] of m[2]!.matchAll(/(\d+)(ms|s|m|h|d)/g)) ms += Number(n) * UNITS[unit!]!
  return m[1] === '-' ? -ms : ms
}

/**
 * The system clock, moved by the offset in `file` when one is named (COMMS_CLOCK_FILE, GATEWAY_CLOCK_FILE: demos and
 * tests move time for a running service, e.g. `npm run clock -- +2d`, instead of waiting). The file
 * is read again when it changes; a missing file is no offset.
 */
export function fileClock(file: string | undefined): Clock {
  if (!file) return () => new Date()
  let seen = -1
  let offset = 0
  return () => {
    let mtime = 0
    try {
      mtime = statSync(file).mtimeMs
    } catch {
      mtime = 0
    }
    if (mtime !== seen) {
      seen = mtime
      offset = mtime ? parseOffset(readFileSync(file, 'utf8')) : 0
    }
    return new Date(Date.now() + offset)
  }
}
