import { ConfigError } from '@clinic/platform'
import { loadCommsConfig, smtpWaitMs } from '../../src/config'

const base = { INTERNAL_AUTH_SECRET: 'x'.repeat(40), EVENT_SIGNING_SECRET: 'y'.repeat(40) }

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
})
