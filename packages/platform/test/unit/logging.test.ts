import { createLogger, lazyChild, requestIdFrom } from '@clinic/platform'
import { DatabaseError } from 'pg'

function capture(level = 'debug') {
  const lines: string[] = []
  const log = createLogger({
    service: 'unit-svc',
    level,
    destination: { write: (s: string) => void lines.push(s) },
  })
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  return { log, lines, records }
}

const secrets = {
  authorization: 'Basic dXNlcjpjc2tfc2VjcmV0X2F1dGg=',
  'x-service-token': 'csk_secret_header_token',
  'x-clinic-assertion': 'v1.eyJjb21wYW55SWQiOjd9.c2lnbmF0dXJl',
  cookie: 'session=secret_cookie_value',
}

// Obviously fake patient data; each value is unique so a leak is easy to spot.
const patient = {
  id: '0190c5a0-0000-7000-8000-0000000000aa',
  first_name: 'Fakefirst',
  last_name: 'Fakelast',
  birth_date: '1901-02-03',
  national_id: 'FAKE-NID-123',
  email: 'fake.patient@example.invalid',
  phone: '+34000000001',
  address: { line1: 'Fake Street 1', city: 'Faketown' },
  guardian: { name: 'Fakeguardian', email: 'fake.guardian@example.invalid' },
  notes: 'fake clinical note',
  body: 'fake message body',
  subject: 'fake subject line',
  reason: 'fake visit reason',
}
const patientValues = [
  'Fakefirst',
  'Fakelast',
  '1901-02-03',
  'FAKE-NID-123',
  'fake.patient@example.invalid',
  '+34000000001',
  'Fake Street 1',
  'Faketown',
  'Fakeguardian',
  'fake.guardian@example.invalid',
  'fake clinical note',
  'fake message body',
  'fake subject line',
  'fake visit reason',
]

describe('createLogger', () => {
  it('redacts token and auth headers, top level and under req', () => {
    const { log, lines, records } = capture()
    log.info({ headers: { ...secrets, accept: 'application/json' } }, 'outgoing call')
    log.info({ req: { method: 'GET', url: '/patients', headers: secrets } }, 'incoming')
    const out = lines.join('')
    for (const s of Object.values(secrets)) expect(out).not.toContain(s)
    const [first] = records()
    // Redacted, not dropped: the line still says the header was there.
    expect(first!.headers).toMatchObject({
      authorization: '[redacted]',
      'x-service-token': '[redacted]',
      'x-clinic-assertion': '[redacted]',
      accept: 'application/json',
    })
  })

  it('redacts tokens and passwords at the top level and one level down', () => {
    const { log, lines } = capture()
    log.info({ token: 'csk_top_token', password: 'top_password' })
    log.info({ user: { token: 'csk_nested_token', password: 'nested_password', username: 'alice' } })
    const out = lines.join('')
    for (const s of ['csk_top_token', 'top_password', 'csk_nested_token', 'nested_password'])
      expect(out).not.toContain(s)
    expect(out).toContain('alice')
  })

  it('redacts patient fields at the top level and nested one and two levels down, keeping ids', () => {
    const { log, lines, records } = capture()
    log.info({ ...patient }, 'top level')
    log.info({ patient }, 'one level down')
    log.info({ body: { patient } }, 'two levels down')
    log.info({ result: { rows: patient } }, 'two levels down again')
    const out = lines.join('')
    for (const s of patientValues) expect(out).not.toContain(s)
    const [top, nested] = records()
    expect(top).toMatchObject({
      id: patient.id,
      first_name: '[redacted]',
      guardian: '[redacted]',
      notes: '[redacted]',
    })
    expect(nested!.patient).toMatchObject({ id: patient.id, email: '[redacted]', address: '[redacted]' })
  })

  it('logs a request as method and path only: no query string, no headers', () => {
    const { log, lines, records } = capture()
    log.info(
      {
        req: { method: 'GET', url: '/patients?q=Fakefirst&codalmacen=ALM1', headers: secrets },
        res: { statusCode: 200 },
      },
      'request completed',
    )
    expect(records()[0]).toMatchObject({ req: { method: 'GET', path: '/patients' }, res: { status: 200 } })
    expect(lines[0]).not.toContain('Fakefirst')
    expect(lines[0]).not.toContain('codalmacen')
    expect(lines[0]).not.toContain('headers')
  })

  it('puts service on every line, also from child loggers and for errors', () => {
    const { log, records } = capture()
    log.info('plain')
    log.child({ request_id: 'r-1' }).warn({ company_id: 7 }, 'child')
    log.error({ err: new Error('boom') }, 'failed')
    const recs = records()
    expect(recs).toHaveLength(3)
    for (const r of recs) {
      expect(r.service).toBe('unit-svc')
      expect(typeof r.time).toBe('string')
      expect(typeof r.msg).toBe('string')
    }
    expect(recs[1]!.request_id).toBe('r-1')
    expect(recs[2]!.err).toMatchObject({ type: 'Error', message: 'boom' })
  })

  it('honours the level', () => {
    const { log, lines } = capture('warn')
    log.info('hidden')
    log.warn('shown')
    expect(lines).toHaveLength(1)
  })
})

describe('lazyChild', () => {
  it('makes the child only when a line is written at an enabled level, with its bindings and redaction', () => {
    const { log, records } = capture('warn')
    const child = jest.spyOn(log, 'child')
    const lazy = lazyChild(log, { request_id: 'req-1' })
    lazy.info({ token: 'csk_secret' }, 'below the level')
    lazy.debug('below the level')
    expect(child).not.toHaveBeenCalled()
    expect(records()).toEqual([])
    lazy.warn({ token: 'csk_secret', id: 'p1' }, 'written')
    lazy.error('again')
    expect(child).toHaveBeenCalledTimes(1)
    expect(records()).toEqual([
      expect.objectContaining({
        level: 40,
        service: 'unit-svc',
        request_id: 'req-1',
        token: '[redacted]',
        id: 'p1',
        msg: 'written',
      }),
      expect.objectContaining({ level: 50, request_id: 'req-1', msg: 'again' }),
    ])
  })

  it('shares its level methods between the lazy children of one parent: none made per request', () => {
    const { log, records } = capture('info')
    const a = lazyChild(log, { request_id: 'a' })
    const b = lazyChild(log, { request_id: 'b' })
    expect(a.info).toBe(b.info)
    a.info('from a')
    b.info('from b')
    expect(records()).toEqual([
      expect.objectContaining({ request_id: 'a', msg: 'from a' }),
      expect.objectContaining({ request_id: 'b', msg: 'from b' }),
    ])
  })

  it('nests: a lazy child of a lazy child carries both bindings, and child() of it too', () => {
    const { log, records } = capture('info')
    const ctx = lazyChild(lazyChild(log, { request_id: 'req-2' }), { company_id: 7 })
    ctx.info('ctx line')
    ctx.child({ event_id: 'e1' }).info('grandchild line')
    expect(records()).toEqual([
      expect.objectContaining({ request_id: 'req-2', company_id: 7, msg: 'ctx line' }),
      expect.objectContaining({ request_id: 'req-2', company_id: 7, event_id: 'e1', msg: 'grandchild line' }),
    ])
    expect(ctx.bindings()).toMatchObject({ request_id: 'req-2', company_id: 7 })
    expect(ctx.isLevelEnabled('debug')).toBe(false)
  })
})

describe('requestIdFrom', () => {
  it("keeps the client's sane X-Request-Id", () => {
    expect(requestIdFrom({ headers: { 'x-request-id': 'abc-123_x.y:z' } })).toBe('abc-123_x.y:z')
  })
  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['with spaces', 'a b'],
    ['with a newline', 'a\nb'],
    ['too long', 'a'.repeat(129)],
    ['html', '<script>'],
    ['an array', ['a', 'b']],
  ])('replaces a %s one with a UUIDv7', (_what, given) => {
    const id = requestIdFrom({ headers: { 'x-request-id': given } })
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})

describe('database errors are logged from an allow-list of fields', () => {
  // A real pg DatabaseError as knex rethrows it: knex prefixes the SQL to the message, and
  // PostgreSQL's detail and where quote the values (the 0x00 case quotes the patient's JSON).
  function pgError() {
    const err = new DatabaseError('invalid byte sequence for encoding "UTF8": 0x00', 150, 'error')
    Object.assign(err, {
      severity: 'ERROR',
      code: '22P05',
      detail: 'Key (national_id)=(FAKE-NID-123) already exists.',
      where:
        'JSON data, line 1: {"name":"Fakeguardian\\u0000...\nunnamed portal parameter $6 = \'Fakefirst\'',
      hint: 'Fakehint',
      internalQuery: 'select Fakeinternal',
      schema: 'patients',
      table: 'patients',
      column: 'notes',
      constraint: 'patients_national_id',
      routine: 'json_ereport_error',
      file: 'jsonfuncs.c',
      line: '621',
    })
    err.message = `insert into "patients" ("first_name") values ('Fakefirst') - ${err.message}`
    err.stack = `error: ${err.message}\n    at parseErrorMessage (parser.ts:395:9)`
    return err
  }
  const leaked = ['Fakefirst', 'FAKE-NID-123', 'Fakeguardian', 'Fakehint', 'Fakeinternal', 'portal parameter']

  test('only code, constraint, routine and the table and column names reach the log', () => {
    const { log, lines, records } = capture()
    log.error({ err: pgError() }, 'request failed')
    for (const v of leaked) expect(lines.join('\n')).not.toContain(v)
    expect(records()[0]!.err).toMatchObject({
      type: 'DatabaseError',
      code: '22P05',
      severity: 'ERROR',
      constraint: 'patients_national_id',
      routine: 'json_ereport_error',
      table: 'patients',
      column: 'notes',
    })
  })

  test('nor through the cause of another error', () => {
    const { log, lines, records } = capture()
    log.error({ err: new Error('could not append', { cause: pgError() }) }, 'append failed')
    for (const v of leaked) expect(lines.join('\n')).not.toContain(v)
    const err = records()[0]!.err as { message: string; cause: { code: string } }
    expect(err.message).toBe('could not append')
    expect(err.cause.code).toBe('22P05')
  })

  test('other errors keep their message and stack', () => {
    const { log, records } = capture()
    log.error({ err: new TypeError('plain bug') }, 'failed')
    expect(records()[0]!.err).toMatchObject({ type: 'TypeError', message: 'plain bug' })
    expect((records()[0]!.err as { stack: string }).stack).toContain('plain bug')
  })
})
