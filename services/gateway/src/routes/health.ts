import type {} from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { request } from 'undici'
import type { Knex } from 'knex'
import type { Amqp } from '@clinic/platform'
import { BASES } from '../bases'
import { ROUTED_SERVICES, type Upstreams } from '../families'

const TIMEOUT_MS = 1500

/** A service's readiness, with the names of its checks that failed (`unreachable` if no answer). */
async function ready(url: string): Promise<{ state: 'ok' | 'down'; failed: string[] }> {
  try {
    const res = await request(`${url}/health/ready`, { headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS })
    const body = (await res.body.json().catch(() => ({}))) as {
      status?: string
      checks?: Record<string, string>
    }
    if (res.statusCode === 200) return { state: 'ok', failed: [] }
    const failed = Object.entries(body.checks ?? {})
      .filter(([, s]) => s !== 'ok')
      .map(([name]) => name)
    return { state: 'down', failed: failed.length ? failed : [body.status ?? 'unready'] }
  } catch {
    return { state: 'down', failed: ['unreachable'] }
  }
}

/**
 * `/api/health`: public, sums up the gateway's own dependencies and every service's readiness;
 * `down` names each part that is not ok (`database`, `patients.database`, `comms.unreachable`).
 */
export interface HealthOptions {
  version: string
  knex: Knex
  amqp: Pick<Amqp, 'connected'>
  upstreams: Upstreams
  /** How long the summary is reused (default 1000 ms). */
  healthCacheMs?: number
}

export async function healthRoutes(app: FastifyInstance, deps: HealthOptions) {
  // Public: computed at most once per `healthCacheMs` (1 s), whatever the request rate, so polling
  // it cannot fan out to every service on every call.
  let cached: { at: number; answer: Promise<{ ok: boolean; body: object }> } | null = null
  const cacheMs = deps.healthCacheMs ?? 1000
  const handler = async (_req: unknown, reply: import('fastify').FastifyReply) => {
    const now = Date.now()
    if (!cached || now - cached.at >= cacheMs) cached = { at: now, answer: summary() }
    const { ok, body } = await cached.answer
    return reply.code(ok ? 200 : 503).send(body)
  }
  const summary = async () => {
    const names = ROUTED_SERVICES.map((f) => f.service)
    const [database, services] = await Promise.all([
      deps.knex.raw('select 1').then(
        () => 'ok' as const,
        () => 'down' as const,
      ),
      Promise.all(names.map((n) => ready(deps.upstreams[n]!))),
    ])
    const checks: Record<string, string> = { database, broker: deps.amqp.connected ? 'ok' : 'down' }
    const down = Object.keys(checks).filter((k) => checks[k] !== 'ok')
    names.forEach((n, i) => {
      const { state, failed } = services[i]!
      checks[n] = state
      down.push(...failed.map((part) => `${n}.${part}`))
    })
    const ok = down.length === 0
    return { ok, body: { status: ok ? 'ok' : 'degraded', version: deps.version, checks, down } }
  }
  for (const base of BASES)
    app.get(`${base}/health`, { config: { public: true, probe: true }, schema: { hide: true } }, handler)
}
