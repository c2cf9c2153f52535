import {
  Problem,
  ValidationFailed,
  fieldErrors,
  toAppError,
  type AppError,
  type FieldError,
} from '@clinic/platform'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { BCP47, COUNTRY, E164, NATIONAL_ID, NOT_BLANK, READ_ONLY_FIELDS } from '../schemas/patient'

const { $id: _problemId, ...problemSchema } = Problem
/** Problem+json responses for the route schemas (inline: a shared $id cannot be repeated per route). */
export const problem = (description: string): TSchema => ({ ...problemSchema, description }) as TSchema

type AjvError = Parameters<typeof fieldErrors>[0][number]

/** Plain words for the patterns of the Patient schema (a regex is no message for a person). */
const PATTERN_MESSAGES: Record<string, string> = {
  [E164]: 'must be an E.164 phone number, e.g. +34600111222',
  [BCP47]: 'must be a BCP 47 language tag, e.g. es or en-GB',
  [COUNTRY]: 'must be an ISO 3166-1 alpha-2 country code, e.g. ES',
  [NATIONAL_ID]: 'may contain only letters, digits, ".", "/" and "-"',
  [NOT_BLANK]: 'must not be blank',
}

/**
 * Routes with a body validate with `attachValidation`, so the schema's errors and the rules the
 * schema cannot express (`extra`) come back in one 400 listing every bad field. A read-only field
 * (id, version, timestamps, company) is named as read-only rather than as unknown.
 */
export function requestError(req: FastifyRequest, extra: (body: unknown) => FieldError[]): AppError | null {
  const err = req.validationError as
    (Error & { validation?: AjvError[]; validationContext?: string }) | undefined
  if (!err) return null
  if (err.validationContext !== 'body' || !err.validation) return toAppError(err)
  const ajv = err.validation.map((e) => {
    if (e.keyword === 'enum')
      return {
        ...e,
        params: {
          ...e.params,
          allowedValues: (e.params.allowedValues as unknown[]).map((v) => (v === null ? 'null' : v)),
        },
      }
    if (e.keyword === 'pattern')
      return { ...e, message: PATTERN_MESSAGES[String(e.params.pattern)] ?? e.message }
    if (e.keyword === 'minLength' && e.params.limit === 1) return { ...e, message: 'must not be empty' }
    return e
  })
  const readOnly = new Set<string>(READ_ONLY_FIELDS.map((f) => `/${f}`))
  const errors = [...fieldErrors(ajv), ...extra(req.body)]
    .map((e) =>
      readOnly.has(e.path) && e.message === 'is not an allowed field' ? { ...e, message: 'is read-only' } : e,
    )
    // One message per field (an empty name breaks both minLength and the blank pattern).
    .filter((e, i, all) => all.findIndex((o) => o.path === e.path) === i)
  const onlyReadOnly = errors.every((e) => e.message === 'is read-only')
  return new ValidationFailed(
    errors,
    onlyReadOnly ? 'Read-only fields cannot be changed' : 'The body is not valid',
  )
}
