import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { AppError, RateLimited, Unauthenticated, routeConfig, type Principal } from '@clinic/platform'
import { addressKey } from '../address-key'
import type { AuthResult, Authenticator } from '../auth/authenticator'
import type { Scope } from '../scopes'
import { retryAfterOf, windowCounter } from './window-counter'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
    /** The principal with the company's and centers' names, for the families that show them. */
    namedPrincipal: Principal | null
    /**
     * The scopes of the request's token (scopes.ts). Beside the principal, not on it: the principal
     * is what the signed assertion carries to services, and they have no use for scopes.
     */
    scopes: readonly Scope[] | null
    /** Company of a token that was found but refused, for the audit trail. */
    refusedCompany: number
  }
}

/** A token in X-service-Token and Basic credentials too: which one is meant is not guessed. */
export class AmbiguousCredentials extends AppError {
  constructor() {
    super({
      status: 400,
      code: 'ambiguous_credentials',
      title: 'Ambiguous credentials',
      detail: 'Send X-service-Token or Authorization: Basic, not both',
    })
  }
}

/**
 * Preflights, routes marked `config: { public: true }`, the Swagger UI and the platform's internal
 * routes (/metrics, /openapi.json: internal addresses only, the platform checks) need no token.
 */
export function isPublic(req: FastifyRequest): boolean {
  if (req.method === 'OPTIONS') return true
  const config = routeConfig(req)
  return config.public === true || config.internal === true || req.url.startsWith('/api/docs')
}

/**
 * A client that sent no token in a form the gateway reads (none, `Authorization: Bearer`, a Basic
 * header without `username:token`) is told the forms it takes, not only that it failed.
 */
const ACCEPTED_FORMS =
  'Send the API token in an X-service-Token header, or as HTTP Basic credentials username:token (Authorization: Basic)'
const refusalDetail = (reason: string) =>
  reason === 'no credentials' || reason === 'unsupported authorization' ? ACCEPTED_FORMS : undefined

/** The request presents credentials of some kind (a request with none guesses nothing). */
const presentsCredentials = (req: FastifyRequest) =>
  req.headers['x-service-token'] !== undefined || req.headers.authorization !== undefined

export interface AuthenticateOptions {
  authenticator: Authenticator
  /**
   * Failed authentications per client address (an IPv6 address by its /64) and minute, default 60
   * (AUTH_FAILURES_PER_ADDRESS_PER_MINUTE): over it, credentials that would be refused are 429.
   */
  failuresPerAddressPerMinute?: number
  /** Shares the failure counts between gateways (as the other limits). */
  redis?: Redis
}

/**
 * Every other request needs a valid token (X-service-Token or Basic `username:token`): sets
 * `req.principal` and `req.scopes`, or answers 401 `unauthenticated` (400 for ambiguous
 * credentials) and keeps the refused token's company. Failed authentications are limited per
 * address more strictly than requests (DESIGN.md section 13): once an address is over the limit,
 * its credentials that would be refused are answered 429 `rate_limited`; a valid token is still
 * served. Missing credentials are 401 and not counted: they guess nothing.
 */
export const authenticate = fp(
  async (app: FastifyInstance, o: AuthenticateOptions) => {
    const max = o.failuresPerAddressPerMinute ?? 60
    const failures = windowCounter({ prefix: 'clinic-gw-authfail-', redis: o.redis })
    app.addHook('onClose', async () => failures.close())
    app.decorateRequest('principal', null)
    app.decorateRequest('namedPrincipal', null)
    app.decorateRequest('scopes', null)
    app.decorateRequest('refusedCompany', 0)

    /** The refusal, or 429 once the address is over its failures. */
    const refusal = async (req: FastifyRequest, error: AppError): Promise<AppError> => {
      if (!presentsCredentials(req)) return error
      try {
        const seen = await failures.count(addressKey(req.ip)) // at once without Redis
        if (seen.n <= max) return error
        req.accessNote = { ...req.accessNote, limited: 'authentication failures' }
        return new RateLimited(retryAfterOf(seen.resetInMs))
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'authentication failure limit skipped (redis)')
        return error
      }
    }

    const settle = (req: FastifyRequest, result: AuthResult, done: (err?: Error) => void) => {
      if (!result.ok) {
        req.refusedCompany = result.companyId ?? 0
        req.accessNote = { cause: result.reason }
        return void refusal(req, new Unauthenticated(refusalDetail(result.reason))).then(done)
      }
      req.principal = result.principal
      req.namedPrincipal = result.named
      req.scopes = result.scopes
      done()
    }
    // A callback hook: a token in the cache is decided at once, with no promise per request.
    app.addHook('onRequest', (req, _reply, done) => {
      if (isPublic(req)) return done()
      if (req.headers['x-service-token'] !== undefined && req.headers.authorization !== undefined) {
        req.accessNote = { cause: 'ambiguous credentials' }
        return void refusal(req, new AmbiguousCredentials()).then(done)
      }
      const result = o.authenticator.authenticate(req.headers)
      // A throw in settle goes to done too: never an unhandled rejection.
      if (result instanceof Promise) return void result.then((r) => settle(req, r, done)).catch(done)
      settle(req, result, done)
    })
  },
  { name: 'authenticate' },
)
