import { readFileSync } from 'node:fs'
import { randomInt } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { waitFor } from '@clinic/platform/testing'
import { admin, freePort, startProcess, waitHealthy, type StackInfo } from './stack'

let cached: StackInfo | undefined
/** The stack the e2e global setup started. */
export function stack(): StackInfo {
  cached ??= JSON.parse(readFileSync(process.env.E2E_STACK_FILE!, 'utf8')) as StackInfo
  return cached
}

export interface Answer<T = any> {
  status: number
  headers: Headers
  body: T
}

export interface CallOptions {
  token?: string
  basic?: { username: string; token: string }
  headers?: Record<string, string>
  body?: unknown
  /** Sent as is, with `contentType`. */
  raw?: string
  contentType?: string
  base?: string
}

/** One HTTP call through the gateway, as a client would make it. */
export async function call<T = any>(method: string, path: string, o: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers['x-service-token'] = o.token
  if (o.basic)
    headers.authorization = `Basic ${Buffer.from(`${o.basic.username}:${o.basic.token}`).toString('base64')}`
  let body: string | undefined
  if (o.raw !== undefined) {
    body = o.raw
    headers['content-type'] = o.contentType ?? 'application/json'
  } else if (o.body !== undefined) {
    body = JSON.stringify(o.body)
    headers['content-type'] = 'application/json'
  }
  const res = await fetch(`${o.base ?? stack().api}${path}`, { method, headers, body })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T }
}

export interface Tenant {
  companyId: number
  centers: string[]
  username: string
  token: string
}

/** A fresh company with centers, a user and a token made with the admin CLI, as a newcomer would. */
export async function makeTenant(
  centers = ['ALM1', 'ALM2'],
  info: Pick<StackInfo, 'env'> = stack(),
): Promise<Tenant> {
  const companyId = randomInt(100_000, 2_000_000_000)
  const username = `user${companyId}`
  await admin(info, 'company:create', '--id', String(companyId), '--name', `E2E Clinic ${companyId}`)
  for (const code of centers)
    await admin(
      info,
      'center:create',
      '--company',
      String(companyId),
      '--code',
      code,
      '--name',
      `Center ${code}`,
    )
  await admin(info, 'user:create', '--company', String(companyId), '--username', username)
  const token = await admin(info, 'token:create', '--username', username)
  return { companyId, centers, username, token }
}

/** Another token of the tenant's user, e.g. limited to centers or expiring. */
export async function tokenFor(t: Tenant, ...options: string[]): Promise<string> {
  return admin(stack(), 'token:create', '--username', t.username, ...options)
}

/** An extra gateway on the same services with other settings (low rate limit, dead upstream...). */
export async function extraGateway(
  env: Record<string, string>,
): Promise<{ api: string; stop: () => Promise<void> }> {
  const port = await freePort()
  const child: ChildProcess = startProcess('gateway', { ...stack().env, GATEWAY_PORT: String(port), ...env })
  const api = `http://127.0.0.1:${port}/api`
  await waitFor(async () => (await fetch(`${api}/health`)).status > 0, {
    timeoutMs: 20_000,
    what: 'extra gateway',
  })
  return {
    api,
    stop: async () => {
      child.kill('SIGTERM')
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, {
        timeoutMs: 10_000,
        what: 'gateway exit',
      })
    },
  }
}

export { waitHealthy }

/** A query on the stack's database, for what a client cannot do (expire a token, read the outbox). */
export async function sql<T = any>(text: string, params: unknown[] = []): Promise<T[]> {
  const { Client } = await import('pg')
  const db = new Client({ connectionString: stack().env.DATABASE_URL })
  await db.connect()
  try {
    return (await db.query(text, params)).rows as T[]
  } finally {
    await db.end()
  }
}
