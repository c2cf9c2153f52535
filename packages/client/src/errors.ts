import type { Problem } from './types'

/** A non-2xx answer, with its problem+json body when it has one (a proxy may answer HTML). */
export class ClinicApiError extends Error {
  readonly status: number
  readonly problem: Problem | undefined

  constructor(response: Response, body: unknown) {
    const problem = isProblem(body) ? body : undefined
    const code = problem ? problem.code : response.statusText
    super(`${response.status} ${code}: ${new URL(response.url || 'http://unknown/').pathname}`)
    this.name = 'ClinicApiError'
    this.status = response.status
    this.problem = problem
  }
}

function isProblem(body: unknown): body is Problem & { code: string } {
  return typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string'
}

/** The data of a successful openapi-fetch result; throws `ClinicApiError` for any other answer. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw new ClinicApiError(result.response, result.error)
  return result.data as T
}
