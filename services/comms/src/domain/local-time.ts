/** An instant as people read it where it happens: its date, its 24-hour time, and the zone's name. */
export interface LocalTime {
  date: string
  time: string
  /** The IANA name with spaces (America/New York). */
  zone: string
}

/**
 * `iso` in `timeZone` (not the server's), in `locale`'s words (Intl.DateTimeFormat): a zone the
 * runtime lacks is read as UTC, and says so.
 */
export function localTime(iso: string, timeZone: string, locale: string): LocalTime {
  const at = new Date(iso)
  const format = (zone: string) => ({
    date: new Intl.DateTimeFormat(locale, { timeZone: zone, dateStyle: 'full' }).format(at),
    time: new Intl.DateTimeFormat(locale, {
      timeZone: zone,
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(at),
    zone: zone.replace(/_/g, ' '),
  })
  try {
    return format(timeZone)
  } catch {
    return format('UTC')
  }
}
