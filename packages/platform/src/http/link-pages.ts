import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { Ctx } from '../context'
import { traceOf } from '../tracing'

/**
 * What every page for people (a patient link, a consent link, an unsubscribe page) is sent with:
 * no script may run, nothing is cached or framed, and the token in the URL is never sent on as a
 * Referer.
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
} as const

/** A page's token is long (ids, a MAC): a wildcard after the page's prefix, since path parameters stop at 100 characters. */
export const LinkTokenParams = Type.Object({ '*': Type.String({ maxLength: 1024 }) })

/** The token of a page's URL: the wildcard after its prefix. */
export const linkTokenOf = (req: FastifyRequest) => (req.params as { '*'?: string })['*'] ?? ''

/** What a link's domain function is given of the request: its token, log, id and trace context. */
export const linkRequestOf = (
  req: FastifyRequest,
): Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'> & { token: string } => ({
  token: linkTokenOf(req),
  log: req.log as unknown as Ctx['log'],
  requestId: String(req.id),
  ...traceOf(req.span),
})
