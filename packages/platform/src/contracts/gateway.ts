import { Type } from '@sinclair/typebox'
import type { ServiceContracts } from './define'

/** Paths asked for, without query strings: up to ten per event. */
const Paths = Type.Array(Type.String())

/**
 * An API token as the audit trail keeps it (the gateway's admin CLI): whose, where and what it may
 * use, until when, and who ran the command (`actor`: --actor or the OS user). Never the secret.
 */
const TokenChange = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  username: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  centers: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every center' }),
  scopes: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every scope' }),
  expires_at: Type.Union([Type.String(), Type.Null()], { description: 'RFC 3339 UTC' }),
  actor: Type.String(),
})

/** The gateway's events: its access log (audit reads the http.* types itself) and the admin CLI's tokens. */
export default {
  'http.request': {
    resource: 'http',
    data: Type.Object({
      method: Type.String(),
      path: Type.String(),
      status: Type.Integer(),
      duration_ms: Type.Number(),
      ip: Type.String(),
      resource_type: Type.Union([Type.String(), Type.Null()]),
      resource_id: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  /** Requests refused for a missing or unknown token, one event per client address and minute. */
  'http.refused': {
    resource: 'http',
    data: Type.Object({
      ip: Type.String(),
      count: Type.Integer(),
      /** The minute counted, as an RFC 3339 instant. */
      window_start: Type.String(),
      paths: Paths,
    }),
  },
  /**
   * Requests served without an API token that reach the API (provider callbacks, CORS preflights),
   * one event per method, status, client address and minute (no company: 0).
   */
  'http.public': {
    resource: 'http',
    data: Type.Object({
      method: Type.String(),
      status: Type.Integer(),
      ip: Type.String(),
      count: Type.Integer(),
      /** The minute counted, as an RFC 3339 instant. */
      window_start: Type.String(),
      paths: Paths,
    }),
  },
  /**
   * The gateway's access events of one group commit, as one message: `events` is the JSON text of
   * an array of `http.request`, `http.refused` and `http.public` events of the gateway, unsigned
   * (this event's signature covers the text), `count` their number. Audit records each as a row of
   * its own; one outbox row, one message and one signature per batch instead of per request.
   */
  'http.batch': {
    resource: 'http',
    data: Type.Object({ count: Type.Integer(), events: Type.String() }),
  },
  /** An API token made with the admin CLI (DESIGN.md section 13): never the token or its hash. */
  'token.created': { resource: 'token', data: TokenChange },
  /** An API token revoked with the admin CLI. */
  'token.revoked': { resource: 'token', data: TokenChange },
} satisfies ServiceContracts
