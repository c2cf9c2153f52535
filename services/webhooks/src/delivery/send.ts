import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { isIP } from 'node:net'
import { UnsafeAddress, bareHost, checkedAddresses, type AddressPolicy } from './address-policy'

/** DESIGN.md section 10: connect 3 s, the whole attempt 10 s, at most 8 KiB of the answer read. */
export const SEND_LIMITS = { connectMs: 3000, totalMs: 10_000, maxReadBytes: 8192 }

export interface SendResult {
  /** The receiver's status code, when it answered. */
  status: number | null
  ok: boolean
  durationMs: number
  /** Why it is not a success: the status, a timeout, a refused address... (no response body). */
  error: string | null
}

export interface SendRequest {
  url: string
  headers: Record<string, string>
  body: string
}

/** A lookup that answers the address already checked, whatever DNS would say now. */
function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address)
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }])
    else callback(null, address, family)
  }) as unknown as LookupFunction
}

// Keep-alive sockets per origin: each was opened to a checked address (the pinned lookup).
const agents = {
  'https:': new https.Agent({ keepAlive: true, maxSockets: 16, timeout: 30_000 }),
  'http:': new http.Agent({ keepAlive: true, maxSockets: 16, timeout: 30_000 }),
}

/**
 * POSTs one webhook: checks the URL's addresses (address-policy) and connects only to the checked
 * one; no redirects are followed (a 3xx is a failure); gives up after the connect or total timeout;
 * reads at most 8 KiB of the answer and ignores it. Never throws.
 */
export async function sendWebhook(
  req: SendRequest,
  policy: AddressPolicy,
  limits = SEND_LIMITS,
): Promise<SendResult> {
  const started = performance.now()
  const done = (status: number | null, error: string | null): SendResult => ({
    status,
    ok: status !== null && status >= 200 && status < 300,
    durationMs: Math.round(performance.now() - started),
    error,
  })
  let url: URL
  let address: string
  try {
    url = new URL(req.url)
    ;[address] = (await checkedAddresses(url, policy)) as [string]
  } catch (err) {
    return done(null, err instanceof UnsafeAddress ? `unsafe_url: ${err.message}` : 'address lookup failed')
  }
  const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null
  if (!transport || (url.protocol === 'http:' && !policy.allowInsecure))
    return done(null, 'unsafe_url: must be https')
  return new Promise<SendResult>((resolve) => {
    let settled = false
    const finish = (status: number | null, error: string | null) => {
      if (settled) return
      settled = true
      clearTimeout(total)
      clearTimeout(connect)
      resolve(done(status, error))
    }
    const request = transport.request({
      protocol: url.protocol,
      host: bareHost(url),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
      lookup: pinnedLookup(address),
      agent: agents[url.protocol as 'https:' | 'http:'],
    })
    // The status decides; the body is read (up to the cap) only to keep the connection reusable.
    let answered: number | null = null
    const verdict = (status: number) => (status >= 200 && status < 300 ? null : `HTTP ${status}`)
    const fail = (error: string) => {
      request.destroy()
      finish(answered, answered === null ? error : verdict(answered))
    }
    const total = setTimeout(() => fail(`no answer within ${limits.totalMs} ms`), limits.totalMs)
    const connect = setTimeout(() => fail(`no connection within ${limits.connectMs} ms`), limits.connectMs)
    request.on('socket', (socket) => {
      // A kept-alive socket is connected already.
      if (!socket.connecting) clearTimeout(connect)
      else socket.once('connect', () => clearTimeout(connect))
    })
    request.on('error', (err: NodeJS.ErrnoException) => finish(null, err.code ?? err.message))
    request.on('response', (res) => {
      const status = res.statusCode ?? 0
      answered = status
      let read = 0
      res.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read > limits.maxReadBytes) {
          res.destroy()
          finish(status, verdict(status))
        }
      })
      res.on('end', () => finish(status, verdict(status)))
      res.on('error', () => finish(status, verdict(status)))
    })
    request.end(req.body)
  })
}
