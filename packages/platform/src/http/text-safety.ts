import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ValidationFailed } from '../errors'
import { unsafeTextErrors } from '../text'

/**
 * NUL and unpaired surrogates, in any string of the path, query or body (field names too): a 400
 * naming the field, for every route and whatever its schema says, before a database sees them.
 */
export function textSafety(app: FastifyInstance) {
  // A callback hook: nothing is awaited, and an async hook costs a promise per request.
  app.addHook('preValidation', (req: FastifyRequest, _reply, done) => {
    const params = unsafeTextErrors(req.params)
    const query = unsafeTextErrors(req.query)
    const body = unsafeTextErrors(req.body)
    // One array of them only when something is wrong: most requests allocate none.
    if (!params.length && !query.length && !body.length) return done()
    done(
      new ValidationFailed(
        [...params, ...query, ...body],
        'The request contains text that cannot be accepted',
      ),
    )
  })
}
