import { trace } from '@opentelemetry/api'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { Logger } from 'pino'
import { v } from './config'
import { recordWith } from './tracing'
import { readVersion } from './version'

// The OpenTelemetry SDK in a process: what records spans (tracing.ts starts them) and where they go.

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
  recordWith(provider.getTracer('@clinic/platform'))
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      recordWith(null)
      trace.disable()
      await provider.shutdown()
    },
  }
}

/** Every service's OTEL_* settings (sharedConfig, service.ts). */
export const tracingConfig = {
  /**
   * Where spans go (OTLP over HTTP, `/v1/traces` under it), e.g. http://otel-collector:4318.
   * Unset: nothing is recorded or exported; the trace context still travels and logs name it.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  OTEL_EXPORTER_OTLP_PROTOCOL: v.string({
    default: 'http/protobuf',
    choices: ['http/protobuf', 'http/json'],
  }),
  /** The spans' `service.name`; unset: the service's own name (gateway, patients, ...). */
  OTEL_SERVICE_NAME: v.string({ optional: true }),
  /**
   * Which traces are recorded (the SDK's names). The default follows the parent's decision, and
   * records every trace that starts here. The gateway makes its own: a client's `sampled` flag
   * decides nothing there.
   */
  OTEL_TRACES_SAMPLER: v.string({ default: 'parentbased_always_on', choices: SAMPLERS }),
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  OTEL_TRACES_SAMPLER_ARG: v.number({ default: '1', min: 0, max: 1 }),
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
 * `untrustedParents`: the gateway's (samplerOf).
 */
export async function startOtlpTracing(
  config: OtlpConfig,
  log: Logger,
  service: string,
  untrustedParents = false,
): Promise<Tracing | null> {
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return null
  const url = new URL('v1/traces', config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/?$/, '/')).href
  // Loaded only when asked for: a process that exports nothing never loads an exporter.
  const { OTLPTraceExporter } =
    config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto')
  const tracing = startTracing({
    serviceName: config.OTEL_SERVICE_NAME ?? service,
    serviceVersion: readVersion(),
    exporter: new OTLPTraceExporter({ url }),
    sampler: samplerOf(
      config.OTEL_TRACES_SAMPLER as SamplerName,
      config.OTEL_TRACES_SAMPLER_ARG,
      untrustedParents,
    ),
  })
  log.info({ endpoint: url, protocol: config.OTEL_EXPORTER_OTLP_PROTOCOL }, 'spans exported over OTLP/HTTP')
  return {
    flush: () => tracing.flush(),
    // On shutdown, the last spans out if the collector takes them; a collector away stops nothing.
    shutdown: () =>
      tracing
        .shutdown()
        .catch((err: Error) => log.warn({ err: err.message }, 'the last spans could not be exported')),
  }
}
