import { resolveRecipient, sendFieldErrors, limitErrors } from '../../src/domain/rules'
import { renderReminder } from '../../src/domain/templates'
import { classifySmtpError } from '../../src/providers/smtp-provider'
import { classifyTwilioError } from '../../src/providers/twilio-provider'
import { retryDelay } from '../../src/domain/deliver-message'
import { guardianOf, makeContact } from '../fixtures'

describe('recipient and channel', () => {
  it('writes to the guardian by default when the patient requires one', () => {
    const p = makeContact({ requires_legal_guardian: true, guardian: guardianOf() })
    expect(resolveRecipient(p, {})).toEqual({
      role: 'guardian',
      name: 'Tutora Ficticia',
      address: 'guardian@example.test',
      channel: 'email',
    })
  })
  it('recipient "patient" overrides the guardian default, with overrideGuardian only', () => {
    const p = makeContact({ requires_legal_guardian: true, guardian: guardianOf() })
    expect(resolveRecipient(p, { recipient: 'patient', overrideGuardian: true })).toMatchObject({
      role: 'patient',
      address: p.email,
    })
    for (const overrideGuardian of [undefined, false])
      expect(() => resolveRecipient(p, { recipient: 'patient', overrideGuardian })).toThrow(
        expect.objectContaining({ code: 'guardian_override_required', status: 422 }),
      )
    // Nothing to override: a patient who needs no guardian, or the guardian by default.
    expect(resolveRecipient(makeContact(), { recipient: 'patient' })).toMatchObject({ role: 'patient' })
    expect(resolveRecipient(p, { overrideGuardian: true })).toMatchObject({ role: 'guardian' })
  })
  it('writes to the patient when no guardian is required', () => {
    const p = makeContact()
    expect(resolveRecipient(p, {})).toMatchObject({ role: 'patient', name: `Testa ${p.last_name}` })
  })
  it('recipient "guardian" without a guardian is guardian_required', () => {
    expect(() => resolveRecipient(makeContact(), { recipient: 'guardian' })).toThrow(
      expect.objectContaining({ code: 'guardian_required', status: 422 }),
    )
  })
  it('channel: asked, else preferred, else email if any, else sms', () => {
    expect(resolveRecipient(makeContact(), { channel: 'sms' }).channel).toBe('sms')
    expect(resolveRecipient(makeContact({ preferred_channel: 'sms' }), {}).channel).toBe('sms')
    expect(resolveRecipient(makeContact(), {}).channel).toBe('email')
    expect(resolveRecipient(makeContact({ email: null }), {})).toMatchObject({
      channel: 'sms',
      address: '+34600000001',
    })
  })
  it('no address on the chosen channel is no_contact_address', () => {
    const p = makeContact({ requires_legal_guardian: true, guardian: guardianOf({ phone: null }) })
    expect(() => resolveRecipient(p, { channel: 'sms' })).toThrow(
      expect.objectContaining({ code: 'no_contact_address' }),
    )
    expect(() => resolveRecipient(makeContact({ email: null, phone: null }), {})).toThrow(
      expect.objectContaining({ code: 'no_contact_address' }),
    )
    expect(() => resolveRecipient(makeContact({ preferred_channel: 'sms', phone: '  ' }), {})).toThrow(
      expect.objectContaining({ code: 'no_contact_address' }),
    )
  })
})

describe('body rules', () => {
  const ok = { patient_id: 'x', body: 'hola' }
  it('accepts a plain body', () => expect(sendFieldErrors(ok)).toEqual([]))
  it('refuses CR or LF in the subject (header injection)', () => {
    expect(sendFieldErrors({ ...ok, subject: 'Hi\r\nBcc: x@example.test' })).toEqual([
      expect.objectContaining({ path: '/subject' }),
    ])
    expect(sendFieldErrors({ ...ok, subject: 'Hi\nthere' })).toHaveLength(1)
  })
  it('subject is for email only', () =>
    expect(sendFieldErrors({ ...ok, channel: 'sms', subject: 'x' })).toHaveLength(1))
  it('needs a body or a template with an appointment', () => {
    expect(sendFieldErrors({ patient_id: 'x' })).toEqual([expect.objectContaining({ path: '/body' })])
    expect(sendFieldErrors({ patient_id: 'x', template: 'appointment_reminder' })).toEqual([
      expect.objectContaining({ path: '/appointment_id' }),
    ])
  })
  it('limits: email 64 KiB (bytes), sms 1,600 characters', () => {
    expect(limitErrors('email', 'a'.repeat(64 * 1024))).toEqual([])
    expect(limitErrors('email', 'a'.repeat(64 * 1024 + 1))).toHaveLength(1)
    expect(limitErrors('email', 'ñ'.repeat(32 * 1024 + 1))).toHaveLength(1)
    expect(limitErrors('sms', 'a'.repeat(1600))).toEqual([])
    expect(limitErrors('sms', 'a'.repeat(1601))).toHaveLength(1)
    expect(sendFieldErrors({ ...ok, channel: 'sms', body: 'a'.repeat(1601) })).toHaveLength(1)
  })
})

describe('failure classification', () => {
  it('SMTP: 5xx permanent, 4xx and connection errors transient, bad address permanent', () => {
    expect(classifySmtpError({ responseCode: 550, command: 'RCPT TO' })).toMatchObject({
      permanent: true,
      reason: 'smtp 550 (RCPT)',
    })
    expect(classifySmtpError({ responseCode: 451, command: 'DATA' })).toMatchObject({ permanent: false })
    expect(classifySmtpError({ code: 'ECONNECTION' })).toMatchObject({ permanent: false })
    expect(classifySmtpError({ code: 'EENVELOPE' })).toMatchObject({ permanent: true })
  })
  it('Twilio: 4xx permanent except 429; 5xx and network transient', () => {
    expect(classifyTwilioError({ status: 400, code: 21211 })).toMatchObject({
      permanent: true,
      reason: 'twilio 400 error 21211',
    })
    expect(classifyTwilioError({ status: 429 })).toMatchObject({ permanent: false })
    expect(classifyTwilioError({ status: 503 })).toMatchObject({ permanent: false })
    expect(classifyTwilioError(new Error('ECONNREFUSED'))).toMatchObject({ permanent: false })
  })
  it('retry delays grow exponentially with jitter, capped', () => {
    expect(retryDelay(1000, 1, () => 0)).toBe(500)
    expect(retryDelay(1000, 1, () => 1)).toBe(1000)
    expect(retryDelay(1000, 4, () => 1)).toBe(8000)
    expect(retryDelay(1000, 30, () => 1)).toBe(600_000)
  })
})

describe('appointment_reminder', () => {
  const a = {
    id: 'a',
    patient_id: 'p',
    codalmacen: 'ALM1',
    practitioner: 'Dra. Prueba',
    status: 'scheduled',
    starts_at: '2026-11-23T08:30:00Z',
    ends_at: '2026-11-23T09:00:00Z',
    time_zone: 'Europe/Madrid',
    version: 1,
  }
  it('renders in Spanish with the local time of the appointment', () => {
    const r = renderReminder(a, 'es', 'Tutora')
    expect(r.body).toContain('09:30')
    expect(r.body).toContain('lunes')
    expect(r.body).toContain('ALM1')
    expect(r.body).toContain('Dra. Prueba')
  })
  it('renders in English, in another time zone', () => {
    const r = renderReminder({ ...a, time_zone: 'America/New_York' }, 'en-GB', 'Tutor')
    expect(r.subject).toBe('Appointment reminder')
    expect(r.body).toContain('03:30')
    expect(r.body).toContain('Monday')
  })
})
