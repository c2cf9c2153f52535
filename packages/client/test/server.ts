// A real HTTP server on 127.0.0.1 for the client tests: it records every request and answers with
// whatever the test's handler returns, so the real fetch, Request and Response classes run.
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Seen {
  method: string
  path: string
  query: URLSearchParams
  headers: IncomingHttpHeaders
  body: string
}

export interface Reply {
  status: number
  headers?: Record<string, string>
  body?: unknown
}

export type Handler = (request: Seen, index: number) => Reply

export async function startServer() {
  const seen: Seen[] = []
  let handler: Handler = () => ({ status: 200, body: {} })
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost')
      const request = {
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      seen.push(request)
      const reply = handler(request, seen.length - 1)
      const problem = reply.status >= 400
      res.writeHead(reply.status, {
        'content-type': problem ? 'application/problem+json' : 'application/json',
        ...reply.headers,
      })
      res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/api`,
    seen,
    /** Answers with this handler from now on. */
    answer(next: Handler) {
      handler = next
    },
    /** Answers with these replies in turn, then repeats the last one. */
    answerInTurn(...replies: Reply[]) {
      handler = (_request, index) => replies[Math.min(index, replies.length - 1)]!
    },
    reset() {
      seen.length = 0
      handler = () => ({ status: 200, body: {} })
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A problem+json body as the API sends it. */
export function problem(status: number, code: string) {
  return {
    type: `https://clinic.example/problems/${code}`,
    title: code,
    status,
    code,
    request_id: 'req-test',
  }
}
