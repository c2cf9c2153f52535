import { errorCodes, type FastifyError } from 'fastify'
import {
  AppError,
  BODY_LIMIT,
  IdempotencyConflict,
  InternalError,
  PROBLEM_BASE,
  RateLimited,
  Unauthenticated,
  ValidationFailed,
  fieldErrors,
  problemBody,
  toAppError,
} from '@clinic/platform'

// Errors in the shape Ajv 8 produces them (Fastify passes them through as `err.validation`).
const ajv = {
  required: {
    instancePath: '',
    keyword: 'required',
    params: { missingProperty: 'first_name' },
    message: "must have required property 'first_name'",
  },
  nestedRequired: {
    instancePath: '/guardian',
    keyword: 'required',
    params: { missingProperty: 'name' },
    message: "must have required property 'name'",
  },
  additional: {
    instancePath: '',
    keyword: 'additionalProperties',
    params: { additionalProperty: 'idempresa' },
    message: 'must NOT have additional properties',
  },
  format: {
    instancePath: '/birth_date',
    keyword: 'format',
    params: { format: 'date' },
    message: 'must match format "date"',
  },
  formatOther: {
    instancePath: '/site',
    keyword: 'format',
    params: { format: 'uri' },
    message: 'must match format "uri"',
  },
  enum: {
    instancePath: '/sex',
    keyword: 'enum',
    params: { allowedValues: ['female', 'male', 'other', 'unknown'] },
    message: 'must be equal to one of the allowed values',
  },
  type: {
    instancePath: '/requires_legal_guardian',
    keyword: 'type',
    params: { type: 'boolean' },
    message: 'must be boolean',
  },
  anyOf: { instancePath: '/email', keyword: 'anyOf', params: {}, message: 'must match a schema in anyOf' },
}

describe('fieldErrors', () => {
  it('maps required, additionalProperties, format, enum and type errors to JSON pointers', () => {
    expect(
      fieldErrors([ajv.required, ajv.nestedRequired, ajv.additional, ajv.format, ajv.enum, ajv.type]),
    ).toEqual([
      { path: '/first_name', message: 'is required' },
      { path: '/guardian/name', message: 'is required' },
      { path: '/idempresa', message: 'is not an allowed field' },
      { path: '/birth_date', message: 'must be a valid date (YYYY-MM-DD)' },
      { path: '/sex', message: 'must be one of: female, male, other, unknown' },
      { path: '/requires_legal_guardian', message: 'must be boolean' },
    ])
  })

  it('names other formats plainly and falls back to a generic message', () => {
    expect(fieldErrors([ajv.formatOther, { instancePath: '/x', keyword: 'custom', params: {} }])).toEqual([
      { path: '/site', message: 'must be a valid uri' },
      { path: '/x', message: 'is not valid' },
    ])
  })

  it('drops union wrappers and duplicate branch errors', () => {
    const typeStr = {
      instancePath: '/email',
      keyword: 'type',
      params: { type: 'string' },
      message: 'must be string',
    }
    const out = fieldErrors([typeStr, { ...typeStr }, ajv.anyOf])
    expect(out).toEqual([{ path: '/email', message: 'must be string' }])
  })
})

describe('toAppError', () => {
  it('turns a lost database connection into 503 upstream_unavailable with Retry-After', () => {
    const lost = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      new Error('Connection terminated unexpectedly'),
      new Error('insert into "patients" ("id") values ($1) - Connection terminated unexpectedly'),
      new Error('ROLLBACK - Client has encountered a connection error and is not queryable'),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' }),
    ]
    for (const err of lost) {
      const app = toAppError(err)
      expect([app.status, app.code, app.headers?.['retry-after']]).toEqual([503, 'upstream_unavailable', '2'])
    }
    // A query error is still a bug of ours: 500.
    expect(toAppError(Object.assign(new Error('syntax error'), { code: '42601' })).status).toBe(500)
  })

  it('turns a transaction that lost a race (deadlock, serialization, lock timeout) into 503 with Retry-After 1', () => {
    for (const code of ['40P01', '40001', '55P03']) {
      const app = toAppError(Object.assign(new Error(`insert into "x" - ${code}`), { code }))
      expect([app.status, app.code, app.headers?.['retry-after']]).toEqual([503, 'upstream_unavailable', '1'])
    }
  })

  it('keeps AppErrors as they are', () => {
    class SlotTaken extends AppError {
      constructor() {
        super({ status: 409, code: 'slot_conflict', title: 'The practitioner is already booked' })
      }
    }
    const e = new SlotTaken()
    expect(toAppError(e)).toBe(e)
  })

  it('turns schema validation errors into validation_failed with every field', () => {
    const err = Object.assign(new Error('body/first_name is required'), {
      validation: [ajv.required, ajv.enum],
      validationContext: 'body',
    }) as unknown as FastifyError
    const app = toAppError(err)
    expect(app).toBeInstanceOf(ValidationFailed)
    expect(app.status).toBe(400)
    expect(app.code).toBe('validation_failed')
    expect(app.detail).toBe('The body is not valid')
    expect(app.errors).toEqual([
      { path: '/first_name', message: 'is required' },
      { path: '/sex', message: 'must be one of: female, male, other, unknown' },
    ])
  })

  it('says "query string" for querystring validation', () => {
    const err = Object.assign(new Error('x'), { validation: [ajv.type], validationContext: 'querystring' })
    expect(toAppError(err).detail).toBe('The query string is not valid')
  })

  it('maps fastify content errors to 413, 415 and 400', () => {
    const tooLarge = toAppError(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
    expect([tooLarge.status, tooLarge.code]).toEqual([413, 'payload_too_large'])
    expect(tooLarge.detail).toContain(String(BODY_LIMIT))
    const media = toAppError(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE())
    expect([media.status, media.code]).toEqual([415, 'unsupported_media_type'])
    for (const e of [
      new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(),
      new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(),
    ]) {
      const bad = toAppError(e)
      expect([bad.status, bad.code]).toEqual([400, 'validation_failed'])
      expect(bad.errors).toEqual([{ path: '', message: 'body must be valid JSON' }])
    }
  })

  it('maps other 4xx to validation_failed and a 404 to not_found', () => {
    const e400 = Object.assign(new Error('bad header'), { statusCode: 400 })
    expect(toAppError(e400).code).toBe('validation_failed')
    const e404 = Object.assign(new Error('gone'), { statusCode: 404 })
    expect([toAppError(e404).status, toAppError(e404).code]).toEqual([404, 'not_found'])
  })

  it('turns anything else into a 500 internal_error that leaks nothing', () => {
    for (const err of [
      new Error('duplicate key value violates unique constraint "patients_pkey" (first_name)=(Ana)'),
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { statusCode: 502 }),
      new TypeError("Cannot read properties of undefined (reading 'email')"),
    ]) {
      const app = toAppError(err)
      expect(app).toBeInstanceOf(InternalError)
      expect([app.status, app.code]).toEqual([500, 'internal_error'])
      const body = JSON.stringify(problemBody(app, 'req-1'))
      for (const secret of ['patients_pkey', 'Ana', 'ECONNREFUSED', '10.0.0.5', 'email', 'TypeError', 'at '])
        expect(body).not.toContain(secret)
    }
  })
})

describe('problemBody', () => {
  it('builds an RFC 9457 body with code, request_id and errors', () => {
    expect(problemBody(new ValidationFailed([{ path: '/a', message: 'is required' }]), 'r1')).toEqual({
      type: `${PROBLEM_BASE}validation_failed`,
      title: 'Request is not valid',
      status: 400,
      code: 'validation_failed',
      detail: 'One or more fields are not valid',
      request_id: 'r1',
      errors: [{ path: '/a', message: 'is required' }],
    })
    const own = new AppError({
      status: 409,
      code: 'slot_conflict',
      title: 'The practitioner is already booked',
    })
    expect(problemBody(own, 'r2')).toEqual({
      type: 'https://clinic.example/problems/slot_conflict',
      title: 'The practitioner is already booked',
      status: 409,
      code: 'slot_conflict',
      request_id: 'r2',
    })
  })

  it('carries the headers the contract asks for', () => {
    expect(new Unauthenticated().headers).toEqual({ 'www-authenticate': 'Basic realm="clinic"' })
    expect(new RateLimited(7).headers).toEqual({ 'retry-after': '7' })
    const e = new IdempotencyConflict()
    expect(e).toBeInstanceOf(AppError)
    expect(e.name).toBe('IdempotencyConflict')
    expect([e.status, e.code]).toEqual([409, 'idempotency_conflict'])
  })
})
