import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import type { Redis } from 'ioredis'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import {
  ASSERTION_HEADER,
  Amqp,
  createDb,
  createLogger,
  migrate,
  unpackAccessBatch,
  verifyAssertion,
  type CloudEvent,
  type EventType,
} from '@clinic/platform'
import { freshCompanyId, testAssertionKeys, testSigner, uniqueName } from '@clinic/platform/testing'
import { AccessLog } from '../../src/access-log'
import { buildApp, type Upstreams } from '../../src/app'
import { ROUTED_SERVICES } from '../../src/families'
import { Authenticator } from '../../src/auth/authenticator'
import { newToken } from '../../src/auth/tokens'
import { identityRepository } from '../../src/db/identity-repository'
import { SCHEMA, migrations } from '../../src/db/migrations'

export const VERSION = '991231.42'
/** What the services verify the gateway's assertions with (GATEWAY_VERIFY_KEY of the run). */
export const VERIFY_KEYS = () => testAssertionKeys()
export const logger = createLogger({ service: 'gateway-test', level: 'silent' })

export interface Received {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
  /** A form body as sent (provider callbacks). */
  form?: string
}

/**
 * A stand-in for one service: echoes what it received as JSON, answers POST with 201 and a
 * service-relative Location, serves a small OpenAPI document and a switchable readiness. With
 * `openapiFromOutside`, it answers /openapi.json as a service does to a caller outside its
 * internal networks: only with a valid assertion addressed to it (`name`), else 404.
 */
export class FakeUpstream {
  received: Received[] = []
  ready = true
  readyCalls = 0
  /** Why each /openapi.json request was refused ('' when served). */
  openapiRefusals: string[] = []
  url = ''
  private app: FastifyInstance

  constructor(
    readonly name: string,
    readonly openapi: Record<string, unknown> = { openapi: '3.1.0', paths: {} },
    o: { openapiFromOutside?: boolean } = {},
  ) {
    this.app = Fastify()
    this.app.get('/health/ready', async (_req, reply) =>
      (this.readyCalls++, reply)
        .code(this.ready ? 200 : 503)
        .send(
          this.ready
            ? { status: 'ok', checks: { database: 'ok', broker: 'ok' } }
            : { status: 'unavailable', checks: { database: 'down', broker: 'ok' } },
        ),
    )
    this.app.get('/openapi.json', async (req, reply) => {
      if (o.openapiFromOutside) {
        const v = await verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, VERIFY_KEYS(), {
          method: 'GET',
          path: '/openapi.json',
          audience: this.name,
        })
        this.openapiRefusals.push(v.ok ? '' : v.reason)
        if (!v.ok) return reply.code(404).send({ code: 'not_found' })
      }
      return this.openapi
    })
    this.app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_req, body, done) => done(null, body),
    )
    // An upload the gateway streams (services.json `uploads`), kept as it arrived.
    this.app.addContentTypeParser(
      'multipart/form-data',
      { parseAs: 'string', bodyLimit: 64 * 1024 * 1024 },
      (_req, body, done) => done(null, body),
    )
    this.app.all('/*', async (req, reply) => {
      const r: Received = { method: req.method, url: req.url, headers: { ...req.headers } }
      if (typeof req.body === 'string') r.form = req.body
      this.received.push(r)
      if (req.method === 'POST') {
        const id = randomUUID()
        return reply
          .code(201)
          .header('location', `/${req.url.split('/')[1]!.split('?')[0]}/${id}`)
          .send({ id, ...r })
      }
      return reply.header('etag', '"1"').send(r)
    })
  }

  async start() {
    await this.app.listen({ port: 0, host: '127.0.0.1' })
    this.url = `http://127.0.0.1:${(this.app.server.address() as AddressInfo).port}`
    return this
  }

  close() {
    return this.app.close()
  }
}

/** A URL on which nothing listens (a port that was just freed). */
export async function deadUrl(): Promise<string> {
  const s = Fastify()
  await s.listen({ port: 0, host: '127.0.0.1' })
  const port = (s.server.address() as AddressInfo).port
  await s.close()
  return `http://127.0.0.1:${port}`
}

/** `url` as the upstream of every service of services.json, but those given in `over`. */
export const upstreamsTo = (url: string, over: Upstreams = {}): Upstreams => ({
  ...Object.fromEntries(ROUTED_SERVICES.map((s) => [s.service, url])),
  ...over,
})

/** The gateway's database, broker connection and migrations, shared by one test file. */
/**
 * The access events in the gateway's outbox, unpacked from their `http.batch` rows, oldest first;
 * of one type, and of one company when given.
 */
export async function accessEvents<T extends EventType>(
  knex: Knex,
  type: T,
  companyId?: number,
): Promise<Array<CloudEvent<T>>> {
  const rows = await knex('outbox').where({ type: 'http.batch' }).orderBy('id')
  return rows
    .flatMap((r) => unpackAccessBatch(r.payload as CloudEvent))
    .filter((e) => e.type === type && (companyId === undefined || e.idempresa === companyId)) as Array<
    CloudEvent<T>
  >
}

export async function infra() {
  await migrate(process.env.DATABASE_URL!, SCHEMA, migrations)
  const knex = createDb(process.env.DATABASE_URL!, { schema: SCHEMA, poolMax: 5 })
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'gateway-test' })
  await amqp.start()
  return { knex, amqp, close: async () => Promise.all([amqp.close(), knex.destroy()]) }
}

export interface GatewayOptions {
  knex: Knex
  amqp: Amqp
  upstreams: Upstreams
  rateLimitPerMinute?: number
  rateLimitPerAddressPerMinute?: number
  /** Failed authentications per address and minute before 429 (default: too many to matter). */
  authFailuresPerAddressPerMinute?: number
  healthCacheMs?: number
  corsOrigins?: string[]
  redis?: Redis
  trustProxy?: false | number | string
  /** Where the gateway logs (default: nowhere). */
  logger?: Logger
  /** The access log's clock (default: the real one). */
  clock?: () => number
}

export async function gateway(o: GatewayOptions) {
  const accessLog = new AccessLog(o.knex, logger)
  const app = await buildApp({
    logger: o.logger ?? logger,
    knex: o.knex,
    amqp: o.amqp,
    version: VERSION,
    signer: testSigner(),
    authenticator: new Authenticator(identityRepository(o.knex), { ttlMs: 5000 }),
    accessLog,
    upstreams: o.upstreams,
    rateLimitPerMinute: o.rateLimitPerMinute ?? 1000,
    rateLimitPerAddressPerMinute: o.rateLimitPerAddressPerMinute ?? 100_000,
    authFailuresPerAddressPerMinute: o.authFailuresPerAddressPerMinute ?? 100_000,
    healthCacheMs: o.healthCacheMs ?? 0,
    corsOrigins: o.corsOrigins ?? [],
    trustProxy: o.trustProxy ?? false,
    redis: o.redis,
    clock: o.clock,
  })
  await app.ready()
  return { app, accessLog, close: async () => (await app.close(), await accessLog.close()) }
}

/**
 * A company with centers ALM1 and ALM2, one user and a token (optionally limited to centers or
 * scopes, or revoked).
 */
export async function tenant(
  knex: Knex,
  opts: { centers?: string[]; scopes?: string[]; revoked?: boolean } = {},
) {
  const repo = identityRepository(knex)
  const companyId = freshCompanyId()
  const username = uniqueName('user')
  await repo.createCompany(companyId, `Clinica ${companyId}`)
  await repo.createCenter(companyId, 'ALM1', 'Centro 1')
  await repo.createCenter(companyId, 'ALM2', 'Centro 2')
  const userId = await repo.createUser(companyId, username)
  const { token, tokenId } = await userToken(knex, { companyId, userId }, opts)
  if (opts.revoked) await repo.revokeToken(tokenId)
  return { companyId, username, userId, token, tokenId, headers: { 'x-service-token': token } }
}

/** A token of a user (as tenant() makes them): every center, scope and no expiry unless given. */
export async function userToken(
  knex: Knex,
  user: { companyId: number; userId: string },
  opts: { centers?: string[]; scopes?: string[]; expiresAt?: Date | null } = {},
): Promise<{ token: string; tokenId: string }> {
  const { token, lookup, hash } = newToken()
  const tokenId = await identityRepository(knex).createToken({
    companyId: user.companyId,
    userId: user.userId,
    name: null,
    lookup,
    hash,
    centers: opts.centers ?? null,
    scopes: opts.scopes ?? null,
    expiresAt: opts.expiresAt ?? null,
  })
  return { token, tokenId }
}

/** A 429 `rate_limited` problem with a Retry-After of 1-60 s and the version header. */
export function expectRateLimited(res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(429)
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
  expect(res.json()).toMatchObject({ status: 429, code: 'rate_limited' })
  const retryAfter = Number(res.headers['retry-after'])
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true)
  expect(res.headers['x-service-version']).toBe(VERSION)
}
