import type {} from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { request } from 'undici'
import type { Deps, Upstreams } from '../app'
import { BASES } from '../bases'

const TIMEOUT_MS = 1500

async function ready(url: string): Promise<'ok' | 'down'> {
  try {
    const res = await request(`${url}/health/ready`, { headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS })
    await res.body.dump()
    return res.statusCode === 200 ? 'ok' : 'down'
  } catch {
    return 'down'
  }
}

/** `/api/health`: public, sums up the gateway's own dependencies and every service's readiness. */
export async function healthRoutes(app: FastifyInstance, { deps }: { deps: Deps }) {
  const handler = async (_req: unknown, reply: import('fastify').FastifyReply) => {
    const names = Object.keys(deps.upstreams) as Array<keyof Upstreams>
    const [database, ...services] = await Promise.all([
      deps.knex.raw('select 1').then(
        () => 'ok' as const,
        () => 'down' as const,
      ),
      ...names.map((n) => ready(deps.upstreams[n])),
    ])
    const checks: Record<string, string> = { database, broker: deps.amqp.connected ? 'ok' : 'down' }
    names.forEach((n, i) => (checks[n] = services[i]!))
    const ok = Object.values(checks).every((s) => s === 'ok')
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'degraded', version: deps.version, checks })
  }
  for (const base of BASES)
    app.get(`${base}/health`, { config: { public: true }, schema: { hide: true } }, handler)
}
