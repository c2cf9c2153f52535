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
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base'
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'

export { SpanKind, type Span, type SpanContext } from '@opentelemetry/api'

/**
 * One trace per request, W3C Trace Context (`traceparent`, `tracestate`) and the OpenTelemetry API.
 * Every process always carries the trace (it costs an id and a header): a request's `traceparent`
 * reaches the services it touches, the events it causes (the CloudEvents Distributed Tracing
 * extension), their consumers and the jobs they leave, and every log line of that work names its
 * `trace_id`. Spans are recorded and exported only when `startTracing` has run (OTLP over HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set): until then a span is the API's non-recording span, with
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

/** The W3C text of a span (what its children are given). */
export const traceOf = (span: Span): TraceHeaders & { traceparent: string } => traceHeaders(span.spanContext())

/** A log line's trace field, for a logger's bindings. */
export const traceField = (span: Span) => ({ trace_id: span.spanContext().traceId })

/** OTEL_TRACES_SAMPLER's values (the OpenTelemetry SDK's names). */
export const SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const
export type SamplerName = (typeof SAMPLERS)[number]

/**
 * The sampler OTEL_TRACES_SAMPLER names. `untrustedParents` (the gateway, whose parents are the
 * clients'): a parent from another process decides nothing, the root sampler does; a client cannot
 * make every request of its recorded by sending `sampled`.
 */
export function samplerOf(name: SamplerName, ratio = 1, untrustedParents = false): Sampler {
  const root = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratio)
  if (!name.startsWith('parentbased_')) return root
  return untrustedParents
    ? new ParentBasedSampler({ root, remoteParentSampled: root, remoteParentNotSampled: root })
    : new ParentBasedSampler({ root })
}

export interface TracingOptions {
  /** `service.name` (OTEL_SERVICE_NAME, default the service's own name). */
  serviceName: string
  serviceVersion?: string
  exporter: SpanExporter
  sampler?: Sampler
  /**
   * `batch` (default): spans leave in the background, in batches (the SDK's OTEL_BSP_* settings).
   * `simple`: each as it ends (tests).
   */
  processor?: 'batch' | 'simple'
}

export interface Tracing {
  /** Exports what is pending now. */
  flush(): Promise<void>
  /** Exports what is pending, and records no more spans. */
  shutdown(): Promise<void>
}

/**
 * Turns recording on in this process: spans go to `exporter` through the SDK (the API's global
 * tracer provider is the SDK's too, for any library that uses it). No context manager: spans are
 * parented explicitly, from the request's `ctx`, an event or a job row, never from async state.
 */
export function startTracing(o: TracingOptions): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: o.serviceName,
      ...(o.serviceVersion ? { [ATTR_SERVICE_VERSION]: o.serviceVersion } : {}),
    }),
    sampler: o.sampler ?? samplerOf('parentbased_always_on'),
    spanProcessors: [
      o.processor === 'simple' ? new SimpleSpanProcessor(o.exporter) : new BatchSpanProcessor(o.exporter),
    ],
  })
  trace.setGlobalTracerProvider(provider)
  const tracer = provider.getTracer('@clinic/platform')
  recording = tracer
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      if (recording === tracer) {
        recording = null
        trace.disable()
      }
      await provider.shutdown()
    },
  }
}

/** The OTEL_* settings of sharedConfig (service.ts), checked there. */
export interface OtlpConfig {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string
  /** `http/protobuf` or `http/json`. */
  OTEL_EXPORTER_OTLP_PROTOCOL: string
  OTEL_SERVICE_NAME?: string
  /** One of SAMPLERS. */
  OTEL_TRACES_SAMPLER: string
  OTEL_TRACES_SAMPLER_ARG: number
}

/**
 * Tracing as the configuration asks: spans exported over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT
 * (`/v1/traces` under it), protobuf or JSON; null, and nothing recorded, when it is unset.
 */
export async function startOtlpTracing(
  config: OtlpConfig,
  o: { service: string; version?: string; untrustedParents?: boolean },
): Promise<Tracing | null> {
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return null
  const url = new URL('v1/traces', config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/?$/, '/')).href
  // Loaded only when asked for: a process that exports nothing never loads an exporter.
  const { OTLPTraceExporter } =
    config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto')
  return startTracing({
    serviceName: config.OTEL_SERVICE_NAME ?? o.service,
    serviceVersion: o.version,
    exporter: new OTLPTraceExporter({ url }),
    sampler: samplerOf(
      config.OTEL_TRACES_SAMPLER as SamplerName,
      config.OTEL_TRACES_SAMPLER_ARG,
      o.untrustedParents,
    ),
  })
}
