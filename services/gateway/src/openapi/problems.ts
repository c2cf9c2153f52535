import { ref, type Json } from './types'

/** `application/problem+json` (RFC 9457): what every error of the API is. */
export const PROBLEM_TYPE = 'application/problem+json'

const FieldError = {
  type: 'object',
  required: ['path', 'message'],
  properties: {
    path: { type: 'string', description: 'JSON pointer of the field (`/birth_date`); `` for the whole body' },
    message: { type: 'string' },
  },
}

const problemFields = {
  type: { type: 'string', description: 'https://clinic.example/problems/<code>' },
  title: { type: 'string' },
  status: { type: 'integer' },
  code: { type: 'string', examples: ['not_found'] },
  detail: { type: 'string' },
  request_id: { type: 'string' },
}
const REQUIRED = ['type', 'title', 'status', 'code', 'request_id']

/** The named schemas of errors, in components (whole objects: generators read them plainly). */
export const PROBLEM_SCHEMAS: Record<string, Json> = {
  Problem: {
    type: 'object',
    description: 'An error (RFC 9457). `code` is stable; `request_id` finds it in the logs.',
    required: REQUIRED,
    properties: problemFields,
  },
  FieldError,
  ValidationProblem: {
    type: 'object',
    description: 'A 400 (RFC 9457): `errors` lists every bad field at once (`validation_failed`).',
    required: REQUIRED,
    properties: { ...problemFields, errors: { type: 'array', items: ref('FieldError') } },
  },
}

/** A response of `status` as problem+json, with what it means. */
export function problemResponse(status: string, description: string) {
  return {
    description,
    content: { [PROBLEM_TYPE]: { schema: ref(status === '400' ? 'ValidationProblem' : 'Problem') } },
  }
}

/**
 * The errors the gateway and the platform may answer on any operation: by status, the name of the
 * shared response in `components.responses` and what it means.
 */
export const COMMON_ERRORS: Record<string, [name: string, description: string]> = {
  '400': ['ValidationFailed', 'validation_failed (errors lists each field) or unknown_center'],
  '401': ['Unauthenticated', 'unauthenticated: no token, or an unknown, revoked or expired one'],
  '403': [
    'Forbidden',
    'insufficient_scope: the token lacks a scope of the operation (its `x-scope`, `x-also-scopes`; `detail` names it), ' +
      'or center_forbidden: the token may not use that center',
  ],
  '404': ['NotFound', 'not_found: no such resource in this company'],
  '413': ['PayloadTooLarge', 'payload_too_large'],
  '415': ['UnsupportedMediaType', 'unsupported_media_type: send JSON'],
  '429': [
    'RateLimited',
    'rate_limited: too many requests for this token or address; retry after Retry-After seconds',
  ],
  '500': ['InternalError', 'internal_error (the request_id finds it in the logs)'],
  '503': [
    'UpstreamUnavailable',
    'upstream_unavailable: a service or dependency is down; retry after Retry-After seconds',
  ],
}
