import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { CENTER_CODE, ValidationFailed, assertCenter } from '@clinic/platform'

/** The `codalmacen` query parameter of an authenticated request, when it is one. */
export const codalmacenOf = (query: unknown): unknown =>
  (query as Record<string, unknown> | undefined)?.codalmacen

/**
 * `codalmacen` (DESIGN.md section 2): one center code (400 validation_failed), of the caller's
 * company (400 unknown_center), that the token may use (403 center_forbidden). Services check
 * again; the gateway refuses early.
 */
export const centers = fp(
  async (app: FastifyInstance) => {
    // A callback hook: nothing is awaited, and an async hook costs a promise per request.
    app.addHook('preHandler', (req, _reply, done) => {
      const code = codalmacenOf(req.query)
      if (!req.principal || code === undefined) return done()
      if (typeof code !== 'string' || !CENTER_CODE.test(code))
        return done(
          new ValidationFailed([
            { path: '/codalmacen', message: 'must be one center code of 1-10 letters, digits, _ or -' },
          ]),
        )
      try {
        assertCenter(req.principal, code)
      } catch (err) {
        return done(err as Error)
      }
      done()
    })
  },
  { name: 'centers', dependencies: ['authenticate'] },
)
