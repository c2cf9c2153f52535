import type { AssertionSigner } from './assertion-keys'
import { UpstreamUnavailable } from './errors'
import {
  CALLS,
  internalApi,
  type CallCtx,
  type Caller,
  type InternalEndpoint,
  type Refusal,
  type ServicesOf,
} from './internal-api/services'
import { callService, lookUp } from './service-call'

export interface InternalClientOptions {
  /** The caller's own key (SERVICE_SIGNING_KEY): a callee takes it only on the routes naming the caller. */
  signer: AssertionSigner
  /** How long a call may take before it is 503 upstream_unavailable (SERVICE_CALL_TIMEOUT_MS). */
  timeoutMs: number
  /** Where a callee answers (its `<NAME>_URL`). */
  baseUrl: (callee: string) => string
}

/** `/internal/x/:id/y` with its parameters, each URI-encoded. */
function pathOf(template: string, params: unknown[]): string {
  let i = 0
  return template.replace(/:[A-Za-z_]+/g, () => encodeURIComponent(String(params[i++])))
}

/** A 4xx's problem+json as the callee told it (its `code`; the meaning's name when it has none). */
function refusalOf(status: number, meaning: string, body: unknown): Refusal {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  const text = (k: string) => (typeof b[k] === 'string' ? { [k]: b[k] as string } : {})
  return { status, code: typeof b.code === 'string' ? b.code : meaning, ...text('title'), ...text('detail') }
}

/** The client method of one endpoint: a lookup's record or null, a command's outcome. */
function methodOf(e: InternalEndpoint, o: InternalClientOptions) {
  const params = (e.path.match(/:[A-Za-z_]+/g) ?? []).length
  const call = { service: e.service, baseUrl: o.baseUrl(e.service), timeoutMs: o.timeoutMs, answer: e.answer }
  return async (ctx: CallCtx, ...args: unknown[]) => {
    const path = pathOf(e.path, args.slice(0, params))
    if (e.kind === 'lookup') return lookUp(ctx, o.signer, { ...call, path })
    const answer = await callService(ctx, o.signer, { ...call, method: e.method, path, body: args[params] })
    if (answer.status === e.ok) return { outcome: 'done', answer: answer.body }
    const meaning = e.refusals[answer.status]
    if (meaning) return { outcome: meaning, refusal: refusalOf(answer.status, meaning, answer.body) }
    ctx.log.warn({ upstream: e.service, status: answer.status }, `unexpected answer to ${e.operationId}`)
    throw new UpstreamUnavailable(`The ${e.service} service is unavailable; retry shortly`)
  }
}

/**
 * The typed clients of a service: one per service its services.json `calls` names (none for a
 * service that calls none), each with a method per internal endpoint it may use (internal-api/). Every call is
 * `callService`'s: signed with the caller's own key on behalf of its caller (company, centers,
 * request id), bounded by `timeoutMs`; a callee down, slow, failing (5xx), answering off-schema or
 * answering what its declaration does not name is 503 upstream_unavailable.
 */
export function internalClients<C extends string>(caller: C, o: InternalClientOptions): ServicesOf<C> {
  const apis = internalApi as Record<string, Record<string, InternalEndpoint>>
  const calls: readonly string[] = Object.hasOwn(CALLS, caller) ? CALLS[caller as Caller] : []
  return Object.fromEntries(
    calls.map((callee) => [
      callee,
      Object.fromEntries(
        Object.entries(apis[callee]!)
          .filter(([, e]) => !e.callers || e.callers.includes(caller))
          .map(([name, e]) => [name, methodOf(e, o)]),
      ),
    ]),
  ) as ServicesOf<C>
}
