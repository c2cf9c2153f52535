import { readFileSync } from 'node:fs'
import { randomInt } from 'node:crypto'
import { connect } from 'node:net'
import type { ChildProcess } from 'node:child_process'
import serviceList from '@clinic/platform/services.json'
import { freePort, waitFor } from '@clinic/platform/testing'
import { admin, startProcess, waitHealthy, type StackInfo } from './stack'

/**
 * How long an effect that goes through the stack (an event through the broker, a worker's turn, a
 * process start) may take before a test gives up on it. Waits poll, so a quiet machine never waits
 * this long; the bound is generous because a machine with another job on its other core stretches
 * every step several times over (the stack, the tests and that job share 2 cores).
 */
export const SETTLE_MS = 120_000
/** The limit of a test or set-up that waits for such effects: room for a few of them in a row. */
export const SLOW_TEST_MS = 300_000

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
  /** Sent as is (bytes too: not UTF-8 on purpose), with `contentType`. */
  raw?: string | Buffer
  contentType?: string
  base?: string
  /** Aborts the request (and the reading of its answer) after this many ms: a `TimeoutError`. */
  timeoutMs?: number
}

/** Upload paths (services.json `uploads`): their POST bodies are multipart/form-data, as documented. */
const UPLOADS = new Set(
  serviceList.services.flatMap((s) => Object.keys((s as { uploads?: object }).uploads ?? {})),
)
const isUpload = (path: string) => UPLOADS.has(path.split('?')[0]!)

/** A PNG of one pixel: the file part of an upload whose body gives no bytes of its own. */
export const SAMPLE_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)

/**
 * An upload's body as a browser would send it: each field a part, `file` a file part (its bytes
 * when given as a Buffer, else SAMPLE_PNG under the given text as its name).
 */
export function multipartOf(fields: Record<string, unknown>, boundary = `----e2e${randomInt(1e9, 9e9)}`) {
  const parts: Buffer[] = []
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue
    if (name === 'file') {
      const bytes = Buffer.isBuffer(value) ? value : SAMPLE_PNG
      const filename = typeof value === 'string' ? value : 'upload.png'
      parts.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename.replace(/["\r\n]/g, '_')}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
        bytes,
        Buffer.from('\r\n'),
      )
      continue
    }
    const text = typeof value === 'string' ? value : JSON.stringify(value)
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${text}\r\n`),
    )
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

/** One HTTP call through the gateway, as a client would make it. */
export async function call<T = any>(method: string, path: string, o: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers['x-service-token'] = o.token
  if (o.basic)
    headers.authorization = `Basic ${Buffer.from(`${o.basic.username}:${o.basic.token}`).toString('base64')}`
  let body: string | Buffer | undefined
  if (o.raw !== undefined) {
    body = o.raw
    headers['content-type'] = o.contentType ?? 'application/json'
  } else if (o.body !== undefined && method === 'POST' && isUpload(path)) {
    const form = multipartOf(o.body as Record<string, unknown>)
    body = form.body
    headers['content-type'] = form.contentType
  } else if (o.body !== undefined) {
    body = JSON.stringify(o.body)
    headers['content-type'] = 'application/json'
  }
  const signal = o.timeoutMs === undefined ? undefined : AbortSignal.timeout(o.timeoutMs)
  const res = await fetch(`${o.base ?? stack().api}${path}`, { method, headers, body, signal })
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
  // Every scope, signing clinical records included (a token made without a list lacks it), so
  // the suites reach every operation; the scopes suite makes its own limited tokens.
  const token = await admin(info, 'token:create', '--username', username, '--scopes', 'all')
  return { companyId, centers, username, token }
}

/** Another token of the tenant's user, e.g. limited to centers or expiring. */
export async function tokenFor(t: Tenant, ...options: string[]): Promise<string> {
  const scopes = options.includes('--scopes') ? [] : ['--scopes', 'all']
  return admin(stack(), 'token:create', '--username', t.username, ...scopes, ...options)
}

/** An extra gateway on the same services with other settings (low rate limit, dead upstream...). */
export async function extraGateway(
  env: Record<string, string>,
): Promise<{ api: string; stop: () => Promise<void> }> {
  const port = await freePort()
  // It runs no exports (EXPORT_CONCURRENCY 0): its odd settings (a dead upstream, a port another
  // process may take meanwhile) must not fail the exports of the other suites, which share the table.
  const child: ChildProcess = startProcess('gateway', {
    ...stack().env,
    GATEWAY_PORT: String(port),
    EXPORT_CONCURRENCY: '0',
    ...env,
  })
  const api = `http://127.0.0.1:${port}/api`
  // A process start and its first answer: seconds on a quiet machine, far more on a busy one.
  await waitFor(async () => (await fetch(`${api}/health`)).status > 0, {
    timeoutMs: 60_000,
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

export interface RawAnswer {
  /** Status codes of the status lines received, in order (interim 1xx ones too). */
  statuses: number[]
  /** Header lines of the first final answer, lower-cased names. */
  headers: Array<[string, string]>
  /** Everything received, as latin1 text. */
  text: string
  /** A final answer arrived whole (by its Content-Length or chunked framing). */
  complete: boolean
  /** The server closed the connection before a whole answer arrived, or without one. */
  closed: boolean
  /** Neither a whole answer nor a close within the time allowed: we gave up on the socket. */
  timedOut: boolean
  /** A socket error (e.g. ECONNRESET), if one ended the exchange. */
  error?: string
  ms: number
}

const FINAL_STATUS = /(?:^|\r\n)HTTP\/\d\.\d [2-9]\d\d/

/** The header lines of the first final answer in `text`, and whether its body has arrived whole. */
function parseAnswer(text: string): { headers: Array<[string, string]>; complete: boolean } {
  const at = text.search(FINAL_STATUS)
  if (at < 0) return { headers: [], complete: false }
  const rest = text.slice(at).replace(/^\r\n/, '')
  const end = rest.indexOf('\r\n\r\n')
  if (end < 0) return { headers: [], complete: false }
  const headers = rest
    .slice(0, end)
    .split('\r\n')
    .slice(1)
    .map((l): [string, string] => [
      l.slice(0, l.indexOf(':')).trim().toLowerCase(),
      l.slice(l.indexOf(':') + 1).trim(),
    ])
  const body = rest.slice(end + 4)
  const length = headers.find(([n]) => n === 'content-length')?.[1]
  const chunked = headers.some(([n, v]) => n === 'transfer-encoding' && /chunked/i.test(v))
  const complete = chunked
    ? /(?:^|\r\n)0\r\n(?:[^\r\n]+\r\n)*\r\n$/.test(body)
    : length !== undefined && Buffer.byteLength(body, 'latin1') >= Number(length)
  return { headers, complete }
}

/**
 * Bytes written as they are to a raw TCP connection (no client library to fix them up), and what
 * comes back until a final answer has arrived whole, the server closes the connection, or
 * `timeoutMs` passes. For requests no HTTP client would send: CRLF inside header values,
 * duplicate framing headers, odd request lines.
 */
export function rawExchange(url: string, request: string | Buffer, timeoutMs = 5000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url)
  const started = Date.now()
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let done = false
    const socket = connect({ host: hostname, port: Number(port) })
    const finish = (o: { closed: boolean; timedOut: boolean; error?: string }) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const text = Buffer.concat(chunks).toString('latin1')
      const statuses = [...text.matchAll(/(?:^|\r\n)HTTP\/\d\.\d (\d{3})/g)].map((m) => Number(m[1]))
      resolve({ statuses, text, ...parseAnswer(text), ...o, ms: Date.now() - started })
    }
    const timer = setTimeout(() => finish({ closed: false, timedOut: true }), timeoutMs)
    socket.on('connect', () => socket.write(request))
    socket.on('data', (d: Buffer) => {
      chunks.push(d)
      if (parseAnswer(Buffer.concat(chunks).toString('latin1')).complete)
        finish({ closed: false, timedOut: false })
    })
    socket.on('end', () => finish({ closed: true, timedOut: false }))
    socket.on('close', () => finish({ closed: true, timedOut: false }))
    socket.on('error', (err: NodeJS.ErrnoException) =>
      finish({ closed: true, timedOut: false, error: err.code ?? err.message }),
    )
  })
}
