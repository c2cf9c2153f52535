import type { AppointmentInfo } from './directories'

const TEXTS = {
  es: {
    subject: 'Recordatorio de su cita',
    body: (a: { name: string; date: string; time: string; center: string; practitioner: string }) =>
      `Hola ${a.name}: le recordamos la cita del ${a.date} a las ${a.time} en el centro ${a.center} con ${a.practitioner}.`,
  },
  en: {
    subject: 'Appointment reminder',
    body: (a: { name: string; date: string; time: string; center: string; practitioner: string }) =>
      `Hello ${a.name}, this is a reminder of the appointment on ${a.date} at ${a.time} at center ${a.center} with ${a.practitioner}.`,
  },
} as const

/** `es-ES`, `en-GB` -> es, en; anything else -> es (the clinic's default language). */
export const templateLanguage = (tag: string): keyof typeof TEXTS =>
  tag.toLowerCase().startsWith('en') ? 'en' : 'es'

/**
 * The appointment_reminder text in the recipient's language, with the appointment's local date
 * and time in its own time zone (not the server's).
 */
export function renderReminder(a: AppointmentInfo, language: string, name: string) {
  const lang = templateLanguage(language)
  const locale = lang === 'en' ? 'en-GB' : 'es-ES'
  const start = new Date(a.starts_at)
  const date = new Intl.DateTimeFormat(locale, { timeZone: a.time_zone, dateStyle: 'full' }).format(start)
  const time = new Intl.DateTimeFormat(locale, {
    timeZone: a.time_zone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).format(start)
  const t = TEXTS[lang]
  return {
    subject: t.subject,
    body: t.body({ name, date, time, center: a.codalmacen, practitioner: a.practitioner }),
  }
}
