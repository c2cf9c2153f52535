import type { Static, TObject, TSchema } from '@sinclair/typebox'
import type { Ctx } from '../context'

/**
 * One internal endpoint of a service (`/internal/...`, never routed by the gateway), declared once:
 * the callee registers its route from it (`serveInternal`: path, schemas, callers) and every caller
 * gets a typed method for it (`internalClients`), so the two cannot drift. Framework-free: the
 * declarations are data and TypeBox schemas.
 */
export interface InternalEndpoint {
  /** The service that serves it (services.json); set by `internalEndpoints`. */
  service: string
  method: 'GET' | 'POST'
  /** Fastify's form, path parameters as `:name` (each a method argument of the client, in order). */
  path: string
  operationId: string
  summary: string
  /**
   * The services that may call it. Absent: every service whose services.json `calls` names this
   * one. A list narrows that (each must call the service); the callee refuses anyone else (401).
   */
  callers?: readonly string[]
  params: TObject
  body?: TSchema
  /** The status of success, and its answer: the callee's serializer and the caller's check. */
  ok: 200 | 202
  answer: TSchema
  /**
   * The 4xx answers a caller is told of, each with its meaning (the outcome the client returns).
   * Any other answer is a failing callee: 503 upstream_unavailable at the caller.
   */
  refusals: Readonly<Record<number, string>>
  /** `lookup`: the client answers the record, or null on 404. `command`: the outcome. */
  kind: 'lookup' | 'command'
}

type Declared = Omit<InternalEndpoint, 'service' | 'kind' | 'ok' | 'refusals' | 'method'>

/** `GET` of one record the caller may see: the record, or null when it does not exist for the caller (404). */
export const lookup = <const E extends Omit<Declared, 'body'>>(e: E) =>
  ({ ...e, method: 'GET', ok: 200, refusals: { 404: 'not_found' }, kind: 'lookup' }) as const

/** An action: its answer when done (`ok`), else the outcome its refusal names. */
export const command = <
  const E extends Declared & { ok: 200 | 202; refusals: Readonly<Record<number, string>> },
>(
  e: E,
) => ({ ...e, method: 'POST', kind: 'command' }) as const

/** A service's endpoints, each stamped with its name (`internalEndpoints('patients', {...})`). */
export function internalEndpoints<
  const S extends string,
  const A extends Record<string, Omit<InternalEndpoint, 'service'>>,
>(service: S, endpoints: A): { [N in keyof A]: A[N] & { service: S } } {
  return Object.fromEntries(Object.entries(endpoints).map(([name, e]) => [name, { ...e, service }])) as {
    [N in keyof A]: A[N] & { service: S }
  }
}

/** A refused call as the callee's problem+json told it. */
export interface Refusal {
  status: number
  code: string
  title?: string
  detail?: string
}

/** What a call carries of its caller's context (company, centers, request id; its trace when there is one). */
export type CallCtx = Pick<Ctx, 'auth' | 'requestId' | 'log'> & Partial<Ctx>

/** The path parameters of `P`, as the client's arguments: `/internal/x/:id/y` takes one string. */
type PathArgs<P extends string> = P extends `${string}:${string}/${infer R}`
  ? [string, ...PathArgs<`/${R}`>]
  : P extends `${string}:${string}`
    ? [string]
    : []
type BodyArg<E> = E extends { body: infer B extends TSchema } ? [body: Static<B>] : []

/** A command's result: done with its answer, or the refusal's meaning and the problem. */
export type Outcome<E extends InternalEndpoint> =
  | { outcome: 'done'; answer: Static<E['answer']> }
  | { [S in keyof E['refusals']]: { outcome: E['refusals'][S]; refusal: Refusal } }[keyof E['refusals']]

/** The typed client method of an endpoint. */
export type ClientMethod<E extends InternalEndpoint> = (
  ctx: CallCtx,
  ...args: [...PathArgs<E['path']>, ...BodyArg<E>]
) => Promise<E['kind'] extends 'lookup' ? Static<E['answer']> | null : Outcome<E>>

/** Whether `C` may call `E`: named in its callers, or any caller of the service when it names none. */
type MayCall<E, C extends string> = E extends { callers: readonly (infer X)[] }
  ? C extends X
    ? true
    : false
  : true

/** The methods of a service's endpoints that the caller `C` may use. */
export type ClientOf<Api, C extends string> = {
  [
    N in keyof Api as Api[N] extends InternalEndpoint ? (MayCall<Api[N], C> extends true ? N : never) : never
  ]: Api[N] extends InternalEndpoint ? ClientMethod<Api[N]> : never
}

/** The callers of an endpoint, given whom each service calls (services.json `calls`). */
export function callersOf(e: InternalEndpoint, calls: Readonly<Record<string, readonly string[]>>): string[] {
  const all = Object.keys(calls).filter((c) => calls[c]!.includes(e.service))
  return e.callers ? [...e.callers] : all
}
