import { signLink } from '@clinic/platform/core'
import type { AppointmentInfo } from '../domain/directories'
import { APPOINTMENT_LINK } from '../domain/link-kinds'
import { renderReminder, templateLanguage } from '../domain/templates'

export interface ReminderText {
  subject: string
  body: string
}

const LINK_LINE = {
  es: (url: string) => `Confirme o cancele su cita: ${url}`,
  en: (url: string) => `Confirm or cancel your appointment: ${url}`,
}

/**
 * The appointment_reminder text in the recipient's language and the appointment's local time,
 * with the patient link (a signed token naming this appointment, expiring at its start).
 */
export async function reminderText(
  a: AppointmentInfo,
  language: string,
  name: string,
  r: { id: string; companyId: number },
  link: { baseUrl: string; secret: string } | null,
): Promise<ReminderText> {
  const rendered = renderReminder(a, language, name)
  if (!link) return rendered
  const lang = templateLanguage(language)
  const token = await signLink(link.secret, APPOINTMENT_LINK, {
    id: r.id,
    companyId: r.companyId,
    appointmentId: a.id,
    lang,
    exp: Math.floor(new Date(a.starts_at).getTime() / 1000),
  })
  const url = `${link.baseUrl.replace(/\/+$/, '')}/p/a/${token}`
  return { subject: rendered.subject, body: `${rendered.body}\n${LINK_LINE[lang](url)}` }
}
