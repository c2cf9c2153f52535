import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, Unauthenticated, type Principal } from '@clinic/platform'
import type { Authenticator } from '../auth/authenticator'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
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
export const isPublic = (req: FastifyRequest) =>
  req.method === 'OPTIONS' ||
  req.routeOptions.config?.public === true ||
  req.routeOptions.config?.internal === true ||
  req.url.startsWith('/api/docs')

/**
 * Every other request needs a valid token (X-service-Token or Basic `username:token`): sets
 * `req.principal`, or answers 401 `unauthenticated` and keeps the refused token's company.
 */
export const authenticate = fp(
  async (app: FastifyInstance, { authenticator }: { authenticator: Authenticator }) => {
    app.decorateRequest('principal', null)
    app.decorateRequest('refusedCompany', 0)
    app.addHook('onRequest', async (req) => {
      if (isPublic(req)) return
      if (req.headers['x-service-token'] !== undefined && req.headers.authorization !== undefined)
        throw new AmbiguousCredentials()
      const result = await authenticator.authenticate(req.headers)
      if (!result.ok) {
        req.refusedCompany = result.companyId ?? 0
        req.accessNote = { cause: result.reason }
        throw new Unauthenticated()
      }
      req.principal = result.principal
    })
  },
  { name: 'authenticate' },
)
