import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { AppError } from '@clinic/platform'
import { scopesNeeded, type Scope } from '../scopes'

/** DESIGN.md section 13: the operation needs a scope the token was not given. */
export class InsufficientScope extends AppError {
  constructor(scope: Scope) {
    super({
      status: 403,
      code: 'insufficient_scope',
      title: 'The token lacks a scope this operation needs',
      detail: `This token lacks the scope ${scope}`,
    })
  }
}

/**
 * After authentication (and the per-token rate limit), before anything is forwarded: the token
 * holds the scope of the operation (scopes.ts), or the answer is 403 `insufficient_scope` naming
 * the scope. Recorded on the access trail as every answer to a token.
 */
export const scopes = fp(
  async (app: FastifyInstance) => {
    // A callback hook: nothing is awaited, and an async hook costs a promise per request.
    app.addHook('preHandler', (req, _reply, done) => {
      if (!req.principal) return done()
      const held = req.scopes ?? []
      const missing = scopesNeeded(req.method, req.url).find((s) => !held.includes(s))
      if (!missing) return done()
      req.accessNote = { ...req.accessNote, cause: 'insufficient scope', scope: missing }
      done(new InsufficientScope(missing))
    })
  },
  { name: 'scopes', dependencies: ['authenticate'] },
)
