import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Attributes,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base'
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions'

export { SpanKind, type Span, type SpanContext } from '@opentelemetry/api'

/**
 * One trace per request, W3C Trace Context (`traceparent`, `tracestate`) and the OpenTelemetry API.
 * Every process always carries the trace (it costs an id and a header): a request's `traceparent`
 * reaches the services it touches, the events it causes (the CloudEvents Distributed Tracing
 * extension), their consumers and the jobs they leave, and every log line of that work names its
 * `trace_id`. Spans are recorded and exported only when `startTracing` has run (OTLP over HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, tracing-sdk.ts): until then a span is the API's non-recording span, with
 * ids of its own and its parent's trace, and nothing else is kept or sent.
 */

/** The W3C trace context as text: what a header, an event's extensions or a job row carries. */
export interface TraceHeaders {
  traceparent?: string
  tracestate?: string
}

/** W3C text as it may arrive: a header sent twice is an array. */
export type TraceText = { traceparent?: string | string[]; tracestate?: string | string[] }

const propagator = new W3CTraceContextPropagator()
const ids = new RandomIdGenerator()
/** The SDK's tracer while tracing is on (startTracing); null: spans are not recorded. */
let recording: Tracer | null = null

/** Spans recorded by `tracer` from now on (null: none). startTracing's (tracing-sdk.ts). */
export function recordWith(tracer: Tracer | null): void {
  recording = tracer
}

/**
 * The span context a `traceparent` (and `tracestate`) names, checked as the W3C Trace Context
 * propagator reads it: a malformed or all-zero one, or none, is undefined (never trusted, never
 * logged). A header sent twice is read from its first copy.
 */
export function parseTrace(h: TraceText): SpanContext | undefined {
  if (!h.traceparent) return undefined
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, h, defaultTextMapGetter))
}

/** A span context as W3C text (`traceparent`, and `tracestate` when it has one). */
export function traceHeaders(sc: SpanContext): TraceHeaders & { traceparent: string } {
  const out: TraceHeaders = {}
  propagator.inject(trace.setSpanContext(ROOT_CONTEXT, sc), out, defaultTextMapSetter)
  return out as TraceHeaders & { traceparent: string }
}

/** The trace id of a `traceparent` (for log lines), if it is one. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  return traceparent ? parseTrace({ traceparent })?.traceId : undefined
}

export interface StartSpan {
  kind?: SpanKind
  /** What the span is a child of: a span context, or W3C text (a header, an event, a job row). */
  parent?: SpanContext | TraceText | null
  attributes?: Attributes
  links?: Link[]
  /** Epoch milliseconds (a batch's spans start when the batch did). */
  startTime?: number
}

const contextOf = (parent: StartSpan['parent']): SpanContext | undefined =>
  !parent ? undefined : 'traceId' in parent ? parent : parseTrace(parent)

/**
 * A span, the child of `parent` (a new trace without a valid one). Recorded by the SDK while
 * tracing is on; else a non-recording span with an id of its own, in its parent's trace with its
 * parent's sampling flag (or a new trace, not sampled).
 */
export function startSpan(name: string, o: StartSpan = {}): Span {
  const parent = contextOf(o.parent)
  if (recording)
    return recording.startSpan(
      name,
      { kind: o.kind ?? SpanKind.INTERNAL, attributes: o.attributes, links: o.links, startTime: o.startTime },
      parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
    )
  return trace.wrapSpanContext({
    traceId: parent?.traceId ?? ids.generateTraceId(),
    spanId: ids.generateSpanId(),
    traceFlags: parent?.traceFlags ?? TraceFlags.NONE,
    traceState: parent?.traceState,
  })
}

/** Whether spans are recorded (startTracing has run): a caller may skip work only a span needs. */
export const tracingOn = (): boolean => recording !== null

/**
 * Ends a span; with `err`, as failed. The error's type (its code when it has one) is recorded,
 * never its message: a database error's message holds the statement's values.
 */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined && span.isRecording()) {
    const e = err as { code?: unknown; constructor?: { name?: string } } | null
    const type = typeof e?.code === 'string' ? e.code : (e?.constructor?.name ?? 'Error')
    span.setAttribute(ATTR_ERROR_TYPE, type)
    span.setStatus({ code: SpanStatusCode.ERROR, message: type })
  }
  span.end()
}

/** Runs `work` in a span (ended when it settles, failed if it throws). */
export async function inSpan<T>(name: string, o: StartSpan, work: (span: Span) => Promise<T>): Promise<T> {
  const span = startSpan(name, o)
  try {
    const out = await work(span)
    endSpan(span)
    return out
  } catch (err) {
    endSpan(span, err)
    throw err
  }
}

/** Each span's W3C text, made once: a request asks for it more than once (its ctx, its forward, its event). */
const texts = new WeakMap<Span, Readonly<TraceHeaders & { traceparent: string }>>()

/** The W3C text of a span (what its children are given). */
export function traceOf(span: Span): Readonly<TraceHeaders & { traceparent: string }> {
  let text = texts.get(span)
  if (!text) texts.set(span, (text = Object.freeze(traceHeaders(span.spanContext()))))
  return text
}

/** A log line's trace field, for a logger's bindings. */
export const traceField = (span: Span) => ({ trace_id: span.spanContext().traceId })
