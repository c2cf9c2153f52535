import { ConfigError, databaseConfig, loadConfig, v } from '@clinic/platform'

const spec = {
  PORT: v.port({ default: '8081' }),
  POOL_MAX: v.int({ default: '10', min: 1, max: 50 }),
  DATABASE_URL: v.url({
    default: 'postgres://postgres@127.0.0.1:5432/clinic',
    protocols: ['postgres:', 'postgresql:'],
  }),
  DEBUG_SQL: v.bool({ default: 'false' }),
  CORS_ORIGINS: v.list({ default: '' }),
  LOG_LEVEL: v.string({ default: 'info', choices: ['debug', 'info', 'warn', 'error', 'silent'] }),
  INTERNAL_AUTH_SECRET: v.string({ min: 32 }),
  SMTP_URL: v.url({ optional: true }),
}
const secret = 'a'.repeat(32)

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return err as ConfigError
  }
  throw new Error('expected a ConfigError')
}

describe('loadConfig', () => {
  it('applies defaults and leaves optional variables undefined', () => {
    const c = loadConfig(spec, { INTERNAL_AUTH_SECRET: secret })
    expect(c).toEqual({
      PORT: 8081,
      POOL_MAX: 10,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/clinic',
      DEBUG_SQL: false,
      CORS_ORIGINS: [],
      LOG_LEVEL: 'info',
      INTERNAL_AUTH_SECRET: secret,
    })
    expect('SMTP_URL' in c).toBe(false)
  })

  it('treats an empty variable as unset (the default applies)', () => {
    const c = loadConfig(spec, { INTERNAL_AUTH_SECRET: secret, PORT: '', LOG_LEVEL: '' })
    expect(c.PORT).toBe(8081)
    expect(c.LOG_LEVEL).toBe('info')
  })

  it('coerces every kind from its string', () => {
    const c = loadConfig(spec, {
      INTERNAL_AUTH_SECRET: secret,
      PORT: '9090',
      POOL_MAX: '7',
      DATABASE_URL: 'postgresql://u:p@db:5433/x',
      DEBUG_SQL: 'YES',
      CORS_ORIGINS: ' https://a.example , ,https://b.example',
      LOG_LEVEL: 'debug',
      SMTP_URL: 'smtp://mail:25',
    })
    expect(c.PORT).toBe(9090)
    expect(c.POOL_MAX).toBe(7)
    expect(c.DATABASE_URL).toBe('postgresql://u:p@db:5433/x')
    expect(c.DEBUG_SQL).toBe(true)
    expect(c.CORS_ORIGINS).toEqual(['https://a.example', 'https://b.example'])
    expect(c.LOG_LEVEL).toBe('debug')
    expect(c.SMTP_URL).toBe('smtp://mail:25')
  })

  it.each([
    ['1', true],
    ['true', true],
    ['On', true],
    ['0', false],
    ['FALSE', false],
    ['no', false],
    ['off', false],
  ])('reads bool %s as %s', (raw, want) => {
    expect(loadConfig({ B: v.bool() }, { B: raw }).B).toBe(want)
  })

  it.each(['maybe', '2', 'y'])('refuses bool %s', (raw) => {
    expect(errorOf(() => loadConfig({ B: v.bool() }, { B: raw })).message).toContain(
      'B must be true or false',
    )
  })

  it.each(['12.5', 'abc', '1e3', ' 12'])('refuses the non-integer %j', (raw) => {
    expect(errorOf(() => loadConfig({ N: v.int() }, { N: raw })).message).toContain('N must be an integer')
  })

  it('checks integer and port ranges', () => {
    expect(errorOf(() => loadConfig({ P: v.port() }, { P: '65536' })).message).toContain(
      'P must be between 0 and 65535',
    )
    expect(errorOf(() => loadConfig({ P: v.port() }, { P: '-1' })).message).toContain(
      'P must be between 0 and 65535',
    )
    expect(loadConfig({ P: v.port() }, { P: '65535' }).P).toBe(65535)
    expect(errorOf(() => loadConfig({ N: v.int({ min: 1, max: 50 }) }, { N: '51' })).message).toContain(
      'N must be between 1 and 50',
    )
    expect(errorOf(() => loadConfig({ N: v.int({ min: 1, max: 50 }) }, { N: '0' })).message).toContain(
      'N must be between 1 and 50',
    )
  })

  it('checks URLs and their protocol', () => {
    expect(errorOf(() => loadConfig({ U: v.url() }, { U: 'not a url' })).message).toContain('U must be a URL')
    expect(
      errorOf(() =>
        loadConfig({ U: v.url({ protocols: ['postgres:', 'postgresql:'] }) }, { U: 'mysql://h/db' }),
      ).message,
    ).toContain('U must be a postgres: or postgresql: URL')
  })

  it('checks choices and minimum length of strings', () => {
    expect(
      errorOf(() => loadConfig(spec, { INTERNAL_AUTH_SECRET: secret, LOG_LEVEL: 'loud' })).message,
    ).toContain('LOG_LEVEL must be one of debug, info, warn, error, silent')
    expect(errorOf(() => loadConfig(spec, { INTERNAL_AUTH_SECRET: 'short' })).message).toContain(
      'INTERNAL_AUTH_SECRET must be at least 32 characters',
    )
    expect(loadConfig(spec, { INTERNAL_AUTH_SECRET: 'b'.repeat(32) }).INTERNAL_AUTH_SECRET).toBe(
      'b'.repeat(32),
    )
  })

  it("checks a string's form: DB_ROLE_PREFIX, empty by default, else a prefix PostgreSQL takes unquoted", () => {
    expect(loadConfig(databaseConfig, {}).DB_ROLE_PREFIX).toBe('')
    expect(loadConfig(databaseConfig, { DB_ROLE_PREFIX: 'staging_' }).DB_ROLE_PREFIX).toBe('staging_')
    expect(loadConfig(databaseConfig, { DB_ROLE_PREFIX: 't0a1b2c3d_' }).DB_ROLE_PREFIX).toBe('t0a1b2c3d_')
    for (const bad of ['staging', 'Staging_', 'st-aging_', '_x_', '1x_', 'x"; DROP ROLE y; --_'])
      expect([bad, errorOf(() => loadConfig(databaseConfig, { DB_ROLE_PREFIX: bad })).message]).toEqual([
        bad,
        expect.stringContaining('DB_ROLE_PREFIX must be empty, or lowercase letters, digits and _'),
      ])
  })

  it('reports every bad variable in one message, without echoing values', () => {
    const err = errorOf(() =>
      loadConfig(spec, {
        PORT: 'eighty',
        POOL_MAX: '500',
        DATABASE_URL: 'http://db',
        DEBUG_SQL: 'perhaps',
        LOG_LEVEL: 'loud',
        INTERNAL_AUTH_SECRET: 'hunter2-is-not-long',
        SMTP_URL: '::',
      }),
    )
    expect(err.message.split('\n')).toHaveLength(1)
    expect(err.message).toMatch(/^Invalid configuration: /)
    for (const name of [
      'PORT',
      'POOL_MAX',
      'DATABASE_URL',
      'DEBUG_SQL',
      'LOG_LEVEL',
      'INTERNAL_AUTH_SECRET',
      'SMTP_URL',
    ])
      expect(err.message).toContain(name)
    expect(err.message).not.toContain('hunter2')
  })

  it('names a missing required variable', () => {
    expect(errorOf(() => loadConfig(spec, {})).message).toBe(
      'Invalid configuration: INTERNAL_AUTH_SECRET is required',
    )
  })

  it('returns a frozen object', () => {
    const c = loadConfig(spec, { INTERNAL_AUTH_SECRET: secret })
    expect(Object.isFrozen(c)).toBe(true)
    expect(() => {
      ;(c as { PORT: number }).PORT = 1
    }).toThrow(TypeError)
  })

  it('reads process.env by default', () => {
    process.env.PLATFORM_TEST_ONLY_VAR = '42'
    try {
      expect(loadConfig({ PLATFORM_TEST_ONLY_VAR: v.int() }).PLATFORM_TEST_ONLY_VAR).toBe(42)
    } finally {
      delete process.env.PLATFORM_TEST_ONLY_VAR
    }
  })
})

/** `secret: true`: a value still the examples' placeholder stops the service at start-up (exit 78). */
describe('loadConfig: secrets left as placeholders', () => {
  const secrets = {
    EVENT_SIGNING_SECRET: v.string({ min: 32, secret: true }),
    SERVICE_VERIFY_KEYS: v.list({ optional: true, secret: true }),
    DATABASE_URL: v.url({ protocols: ['postgres:'], secret: true }),
    LOG_LEVEL: v.string({ default: 'info' }),
  }
  const real = {
    EVENT_SIGNING_SECRET: 'f3'.repeat(32),
    DATABASE_URL: 'postgres://clinic_patients:s3cret-value@db:5432/clinic',
  }

  it('accepts real values', () => {
    expect(loadConfig(secrets, { ...real, SERVICE_VERIFY_KEYS: 'comms=MCowBQYDK2VwAyEA' })).toMatchObject(
      real,
    )
  })

  it.each([
    ['EVENT_SIGNING_SECRET', 'change-me-events-patients-to-64-hex-characters-from-openssl'],
    ['EVENT_SIGNING_SECRET', 'CHANGE_ME_PATIENTS_EVENT_KEY_64_HEX_CHARACTERS_FROM_OPENSSL_RAND_HEX_32'],
    ['EVENT_SIGNING_SECRET', 'Change-Me-and-long-enough-to-pass-the-32-characters'],
    ['SERVICE_VERIFY_KEYS', 'appointments=MCowBQYDK2VwAyEA,comms=change-me-comms-service-verify-key'],
    ['DATABASE_URL', 'postgres://clinic_patients:change-me-db-patients@postgres:5432/clinic'],
    ['DATABASE_URL', 'postgres://clinic_patients:CHANGE_ME@postgres.example.internal:5432/clinic'],
  ])('refuses %s = %s with one line naming it', (name, value) => {
    const err = errorOf(() => loadConfig(secrets, { ...real, [name]: value }))
    expect(err.message).toBe(
      `Invalid configuration: ${name} is a placeholder (change-me...): set a real secret`,
    )
  })

  it('leaves variables that are not secrets alone', () => {
    expect(loadConfig({ NOTE: v.string() }, { NOTE: 'change-me' }).NOTE).toBe('change-me')
  })
})
