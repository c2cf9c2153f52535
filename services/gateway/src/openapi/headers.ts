import type { Operation, Response } from './types'

type Header = NonNullable<Response['headers']>[string]

const header = (description: string, schema: object, required = false): Header => ({
  description,
  required,
  schema: schema as Header['schema'],
})
const integer = { type: 'integer', minimum: 0 }

/** The response headers of the API, named once in `components.headers`. */
export const HEADERS: Record<string, Header> = {
  ServiceVersion: header(
    'The API version (CalVer YYMMDD.NN), on every answer',
    { type: 'string', pattern: '^\\d{6}\\.\\d{2}$' },
    true,
  ),
  RequestId: header(
    'The id of this request in logs, events and the audit trail (yours, if sane), on every answer',
    { type: 'string' },
    true,
  ),
  RateLimitLimit: header('Requests the token may make in the window', integer),
  RateLimitRemaining: header('Requests left in the window', integer),
  RateLimitReset: header('Seconds until the window resets', integer),
  RetryAfter: header('Seconds to wait before retrying', { type: 'string', pattern: '^\\d+$' }, true),
  WwwAuthenticate: header('`Basic realm="clinic"`', { type: 'string' }, true),
  IdempotentReplayed: header('`true` when the answer replays the first one of its Idempotency-Key', {
    type: 'string',
    enum: ['true'],
  }),
}

const use = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` }) as unknown as Header

/**
 * The headers each answer carries, on every response: the version and request id on all, the rate
 * limit on a token's answers, Retry-After on 429 and 503, Idempotent-Replayed on a token's POST
 * success; a service's own (ETag, Location) are always sent.
 */
export function documentHeaders(method: string, op: Operation, secured: boolean) {
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if ('$ref' in response) continue // a shared response: its headers are in components
    const own = Object.fromEntries(
      Object.entries(response.headers ?? {}).map(([name, h]) => [
        name.toLowerCase() === 'etag' ? 'ETag' : name.toLowerCase() === 'location' ? 'Location' : name,
        { ...h, required: true },
      ]),
    )
    response.headers = { ...headersOf(status, secured, method === 'post'), ...own }
  }
}

/** The shared headers of an answer of `status`. */
export function headersOf(status: string, secured: boolean, post = false): Record<string, Header> {
  return {
    'X-service-Version': use('ServiceVersion'),
    'X-Request-Id': use('RequestId'),
    ...(secured
      ? {
          'RateLimit-Limit': use('RateLimitLimit'),
          'RateLimit-Remaining': use('RateLimitRemaining'),
          'RateLimit-Reset': use('RateLimitReset'),
        }
      : {}),
    ...(status === '429' || status === '503' ? { 'Retry-After': use('RetryAfter') } : {}),
    ...(status === '401' ? { 'WWW-Authenticate': use('WwwAuthenticate') } : {}),
    ...(secured && post && status.startsWith('2')
      ? { 'Idempotent-Replayed': use('IdempotentReplayed') }
      : {}),
  }
}
