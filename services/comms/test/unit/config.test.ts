import { ConfigError, createLogger } from '@clinic/platform'
import { loadCommsConfig, messagingLimits, missingProviderVars, smtpWaitMs } from '../../src/config'
import { providersFrom } from '../../src/providers'
import { FileEmailProvider, SmtpProvider } from '../../src/providers/smtp-provider'
import { FileSmsProvider, TwilioProvider } from '../../src/providers/twilio-provider'

const secrets = {
  GATEWAY_VERIFY_KEY: process.env.GATEWAY_VERIFY_KEY!,
  AMQP_URL: 'amqp://clinic-comms:test@127.0.0.1:5672',
  COMMS_LINK_SECRET: 'z'.repeat(32),
}
/** Development delivery: no provider needed. */
const base = { ...secrets, COMMS_DELIVERY: 'files' }
const smtp = { SMTP_URL: 'smtp://127.0.0.1:2525' }
const twilio = {
  TWILIO_ACCOUNT_SID: 'AC' + '0'.repeat(32),
  TWILIO_AUTH_TOKEN: 'test-token',
  TWILIO_FROM: '+34600000009',
}
/** The one line a refused start-up prints. */
const refusal = (env: Record<string, string>) => {
  try {
    loadCommsConfig(env)
    return null
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
}

describe('comms configuration', () => {
  it('SMTP waits default well under the stale-sending window (nodemailer alone waits up to 10 min)', () => {
    const c = loadCommsConfig({ ...base })
    expect([c.SMTP_CONNECTION_TIMEOUT_MS, c.SMTP_GREETING_TIMEOUT_MS, c.SMTP_SOCKET_TIMEOUT_MS]).toEqual([
      10_000, 10_000, 30_000,
    ])
    expect(smtpWaitMs(c) * 2).toBeLessThanOrEqual(c.SENDING_STALE_MINUTES * 60_000)
  })

  it('refuses SMTP waits that could outlast half the stale window', () => {
    const env = { ...base, SMTP_URL: 'smtp://127.0.0.1:2525', SENDING_STALE_MINUTES: '2' }
    expect(() => loadCommsConfig({ ...env, SMTP_SOCKET_TIMEOUT_MS: '120000' })).toThrow(ConfigError)
    expect(() => loadCommsConfig({ ...env, SMTP_SOCKET_TIMEOUT_MS: '30000' })).not.toThrow()
    // Without SMTP_URL (files under OUTBOX_DIR) the SMTP waits do not matter.
    expect(() =>
      loadCommsConfig({ ...base, SENDING_STALE_MINUTES: '1', SMTP_SOCKET_TIMEOUT_MS: '120000' }),
    ).not.toThrow()
  })

  it('COMMS_LINK_SECRET is required, 32+ characters', () => {
    const { COMMS_LINK_SECRET: _, ...without } = base
    expect(refusal(without)).toMatch(/COMMS_LINK_SECRET is required/)
    expect(refusal({ ...base, COMMS_LINK_SECRET: 'short' })).toMatch(/COMMS_LINK_SECRET must be at least 32/)
  })
})

describe('delivery modes (COMMS_DELIVERY)', () => {
  const log = createLogger({ service: 'comms', level: 'silent' })

  it('providers (the default) needs both providers: one line naming what is missing', () => {
    expect(refusal(secrets)).toBe(
      'Invalid configuration: no email provider (set SMTP_URL) and no SMS provider (set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_FROM) — or COMMS_DELIVERY=files for development',
    )
    expect(refusal({ ...secrets, ...twilio })).toBe(
      'Invalid configuration: no email provider (set SMTP_URL) — or COMMS_DELIVERY=files for development',
    )
    // Only what is missing is named; a messaging service sid stands for TWILIO_FROM.
    expect(refusal({ ...secrets, ...smtp, TWILIO_ACCOUNT_SID: twilio.TWILIO_ACCOUNT_SID })).toMatch(
      /: no SMS provider \(set TWILIO_AUTH_TOKEN, TWILIO_FROM\) — or COMMS_DELIVERY=files/,
    )
    const { TWILIO_FROM: _, ...noFrom } = twilio
    expect(
      refusal({ ...secrets, ...smtp, ...noFrom, TWILIO_MESSAGING_SERVICE_SID: 'MG' + '0'.repeat(32) }),
    ).toBeNull()
    expect(refusal({ ...secrets, ...smtp, ...twilio, COMMS_DELIVERY: 'providers' })).toBeNull()
    expect(refusal({ ...secrets, COMMS_DELIVERY: 'outbox' })).toMatch(
      /COMMS_DELIVERY must be one of providers, files/,
    )
    expect(refusal(secrets)!.split('\n')).toHaveLength(1)
  })

  it('providers: both real providers, no files', async () => {
    const c = loadCommsConfig({ ...secrets, ...smtp, ...twilio })
    expect(missingProviderVars(c)).toEqual({ email: [], sms: [] })
    const p = providersFrom(c, log)
    expect([p.email, p.sms]).toEqual([expect.any(SmtpProvider), expect.any(TwilioProvider)])
    await p.email.close?.()
  })

  it('files: a channel without a provider writes files; a configured provider is still used', async () => {
    const none = providersFrom(loadCommsConfig(base), log)
    expect([none.email, none.sms]).toEqual([expect.any(FileEmailProvider), expect.any(FileSmsProvider)])
    const some = providersFrom(loadCommsConfig({ ...base, ...smtp }), log)
    expect([some.email, some.sms]).toEqual([expect.any(SmtpProvider), expect.any(FileSmsProvider)])
    await some.email.close?.()
  })

  it('the messaging limits default as DESIGN.md section 12 says', () => {
    expect(messagingLimits(loadCommsConfig(base))).toEqual({
      dailySms: 2000,
      dailyEmail: 20000,
      hourlyPerAddress: 10,
      smsCountries: ['ES', 'PT', 'FR', 'AD', 'GB', 'DE', 'IT'],
    })
    expect(messagingLimits(loadCommsConfig({ ...base, COMMS_SMS_COUNTRIES: 'es, pt' })).smsCountries).toEqual(
      ['ES', 'PT'],
    )
  })
})
