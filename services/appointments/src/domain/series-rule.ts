import { RRule, type Options, type Weekday } from 'rrule'

/**
 * The RFC 5545 RRULE subset of a series (DESIGN.md section 20): FREQ=DAILY|WEEKLY|MONTHLY,
 * INTERVAL, COUNT or UNTIL (exactly one), BYDAY, BYMONTHDAY. The text is read by the rrule library
 * (RRule.parseString); this file only refuses what the subset leaves out and values rrule lets
 * through, naming the part.
 */

export const MAX_OCCURRENCES = 104
const MAX_INTERVAL = 999
const SUBSET = 'FREQ, INTERVAL, COUNT or UNTIL, BYDAY, BYMONTHDAY'

/** rrule's option names and the RRULE part each comes from. */
const PART_OF: Record<string, string> = {
  freq: 'FREQ',
  interval: 'INTERVAL',
  count: 'COUNT',
  until: 'UNTIL',
  byweekday: 'BYDAY',
  bymonthday: 'BYMONTHDAY',
  bysetpos: 'BYSETPOS',
  bymonth: 'BYMONTH',
  byyearday: 'BYYEARDAY',
  byweekno: 'BYWEEKNO',
  byhour: 'BYHOUR',
  byminute: 'BYMINUTE',
  bysecond: 'BYSECOND',
  byeaster: 'BYEASTER',
  wkst: 'WKST',
  dtstart: 'DTSTART',
  tzid: 'TZID',
}
const SUPPORTED = new Set(['freq', 'interval', 'count', 'until', 'byweekday', 'bymonthday'])
const FREQS = new Map<number, Rule['freq']>([
  [RRule.DAILY, 'DAILY'],
  [RRule.WEEKLY, 'WEEKLY'],
  [RRule.MONTHLY, 'MONTHLY'],
])

/** How UNTIL was written: a date (the whole local day), a local date-time, or a UTC instant. */
export type UntilForm = 'date' | 'local' | 'utc'

export interface Rule {
  freq: 'DAILY' | 'WEEKLY' | 'MONTHLY'
  /** What rrule expands (no dtstart, no until: the expansion adds them). */
  options: Partial<Options>
  count?: number
  /** UNTIL as rrule read it (ms: floating for date and local, an instant for utc). */
  until?: { form: UntilForm; ms: number }
}

const isInt = (v: unknown, min: number, max: number) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max

/** The text without a leading `RRULE:`, and each part's name as written (to find repeats). */
function partsOf(text: string): { body: string; names: string[] } {
  const body = text.trim().replace(/^RRULE:/i, '')
  return { body, names: body.split(';').map((p) => p.split('=')[0]!.toUpperCase()) }
}

/** UNTIL's own text decides its form; rrule reads the value (and the digits must read back). */
function untilOf(body: string, until: Date): { form: UntilForm; ms: number } | { error: string } {
  const raw = /(?:^|;)UNTIL=([^;]*)/i.exec(body)?.[1] ?? ''
  const form: UntilForm | null = /^\d{8}$/.test(raw)
    ? 'date'
    : /^\d{8}T\d{6}$/i.test(raw)
      ? 'local'
      : /^\d{8}T\d{6}Z$/i.test(raw)
        ? 'utc'
        : null
  const digits = until.toISOString().replace(/[-:]|\.\d+Z$/g, '')
  if (!form || Number.isNaN(until.getTime()) || !digits.startsWith(raw.slice(0, 15).toUpperCase()))
    return { error: 'UNTIL must be a date (20271231) or a date-time (20271231T235959 or ...Z)' }
  return { form, ms: until.getTime() }
}

function weekdayErrors(freq: Rule['freq'], days: unknown): string[] {
  const list = (Array.isArray(days) ? days : [days]) as Array<Weekday | undefined>
  if (list.some((d) => d === undefined || d === null))
    return ['BYDAY must list days as MO, TU, WE, TH, FR, SA, SU (comma-separated)']
  const numbered = list.filter((d) => d!.n !== undefined && d!.n !== null && d!.n !== 0)
  if (numbered.length && freq !== 'MONTHLY')
    return ['BYDAY takes a number (1MO, -1FR) only with FREQ=MONTHLY']
  if (numbered.some((d) => !isInt(Math.abs(d!.n!), 1, 5))) return ['BYDAY numbers must be 1 to 5 or -1 to -5']
  return []
}

function monthdayErrors(freq: Rule['freq'], days: unknown): string[] {
  if (freq === 'WEEKLY') return ['BYMONTHDAY cannot be used with FREQ=WEEKLY']
  const list = Array.isArray(days) ? days : [days]
  return list.every((d) => isInt(d, -31, 31) && d !== 0)
    ? []
    : ['BYMONTHDAY must be days 1 to 31 or -1 to -31']
}

/** What is wrong with the rule's values (after the parts are known to be the subset's). */
function valueErrors(o: Partial<Options>, freq: Rule['freq']): string[] {
  const errors: string[] = []
  if (o.interval !== undefined && !isInt(o.interval, 1, MAX_INTERVAL))
    errors.push(`INTERVAL must be a whole number from 1 to ${MAX_INTERVAL}`)
  if (o.count !== undefined && !isInt(o.count, 1, MAX_OCCURRENCES))
    errors.push(`COUNT must be a whole number from 1 to ${MAX_OCCURRENCES}`)
  if ((o.count === undefined) === (o.until === undefined))
    errors.push(
      o.count === undefined ? 'needs an end: COUNT or UNTIL' : 'COUNT and UNTIL cannot both be given',
    )
  if (o.byweekday !== undefined) errors.push(...weekdayErrors(freq, o.byweekday))
  if (o.bymonthday !== undefined) errors.push(...monthdayErrors(freq, o.bymonthday))
  return errors
}

/**
 * The rule of an RRULE text (an optional `RRULE:` prefix, parts separated by `;`), or every reason
 * it is refused, each naming its part.
 */
export function parseRule(text: string): { rule: Rule } | { errors: string[] } {
  const { body, names } = partsOf(text)
  const bare = body.split(';').filter((p) => !/^[A-Za-z]+=[^=]+$/.test(p))
  if (bare.length)
    return { errors: bare.map((p) => `"${p}" is not a part NAME=VALUE (the subset: ${SUBSET})`) }
  let o: Partial<Options>
  try {
    o = RRule.parseString(body)
  } catch (err) {
    const what = /property '([^']*)'/.exec((err as Error).message)?.[1]
    if (what !== undefined)
      return { errors: [`${what || '(empty)'} is not an RRULE part (the subset: ${SUBSET})`] }
    return { errors: [`is not an RRULE: ${(err as Error).message}`] }
  }
  const repeated = names.filter((n, i) => names.indexOf(n) !== i)
  const unsupported = Object.keys(o)
    .filter((k) => o[k as keyof Options] !== undefined && !SUPPORTED.has(k))
    .map((k) => PART_OF[k] ?? k.toUpperCase())
  const errors = [
    ...[...new Set(repeated)].map((n) => `${n} is given more than once`),
    ...unsupported.map((p) => `${p} is not supported (the subset: ${SUBSET})`),
  ]
  const freq = o.freq === undefined ? undefined : FREQS.get(o.freq)
  if (o.freq === undefined) errors.push('FREQ is required')
  else if (!freq) errors.push('FREQ must be DAILY, WEEKLY or MONTHLY')
  if (errors.length || !freq) return { errors }
  const valueProblems = valueErrors(o, freq)
  let until: Rule['until']
  if (o.until) {
    const u = untilOf(body, o.until)
    if ('error' in u) valueProblems.push(u.error)
    else until = u
  }
  if (valueProblems.length) return { errors: valueProblems }
  const options: Partial<Options> = { freq: o.freq }
  if (o.interval !== undefined) options.interval = o.interval
  if (o.byweekday !== undefined) options.byweekday = o.byweekday
  if (o.bymonthday !== undefined) options.bymonthday = o.bymonthday
  return { rule: { freq, options, count: o.count ?? undefined, until } }
}

/**
 * The rule as a series shows and keeps it: rrule's own text of it (no `RRULE:` prefix), with
 * `count` or an UNTIL at `untilWall` (a floating local date-time, written without `Z`).
 */
export function ruleText(rule: Rule, end: { count: number } | { untilWall: number }): string {
  const o: Partial<Options> = { freq: rule.options.freq }
  if (rule.options.interval !== undefined) o.interval = rule.options.interval
  if ('count' in end) o.count = end.count
  else o.until = new Date(end.untilWall)
  if (rule.options.byweekday !== undefined) o.byweekday = rule.options.byweekday
  if (rule.options.bymonthday !== undefined) o.bymonthday = rule.options.bymonthday
  return RRule.optionsToString(o)
    .replace(/^RRULE:/, '')
    .replace(/(UNTIL=\d{8}T\d{6})Z/, '$1')
}
