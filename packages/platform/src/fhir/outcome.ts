import type { OperationOutcome } from '@medplum/fhirtypes'
import { PROBLEM_BASE, type AppError } from '../errors'

/** FHIR's issue type for each status we answer (the IssueType value set). */
const ISSUE_TYPES: Record<number, NonNullable<OperationOutcome['issue']>[number]['code']> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  409: 'conflict',
  410: 'deleted',
  412: 'conflict',
  413: 'too-costly',
  415: 'not-supported',
  422: 'business-rule',
  429: 'throttled',
  501: 'not-supported',
  503: 'transient',
}

/**
 * An error on a `/fhir` path as FHIR clients expect it (DESIGN.md section 19): an OperationOutcome
 * with the same status. Each issue carries our stable `code` as a coding (system: the problem type
 * base, as in problem+json's `type`) and the message; a 400 has one issue per field, naming it.
 */
export function operationOutcome(err: AppError, requestId: string): OperationOutcome {
  const code = ISSUE_TYPES[err.status] ?? (err.status >= 500 ? 'exception' : 'processing')
  const details = (text: string) => ({
    coding: [{ system: PROBLEM_BASE, code: err.code, display: err.title }],
    text,
  })
  const fields = err.errors ?? []
  return {
    resourceType: 'OperationOutcome',
    id: requestId.replace(/[^A-Za-z0-9\-.]/g, '-').slice(0, 64),
    issue: fields.length
      ? fields.map((f) => ({
          severity: 'error' as const,
          code,
          details: details(`${f.path.replace(/^\//, '')} ${f.message}`.trim()),
          diagnostics: err.detail ?? err.title,
        }))
      : [{ severity: 'error' as const, code, details: details(err.detail ?? err.title) }],
  }
}

/**
 * A path under the FHIR base, as a service sees it (`/fhir/...`) or as the gateway does, under
 * either API base (`/api/fhir/...`, `/api/3/fhir/...`).
 */
export const isFhirPath = (url: string): boolean => /^(?:\/api(?:\/3)?)?\/fhir(?:[/?]|$)/.test(url)
