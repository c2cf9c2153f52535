import type { Link } from '@opentelemetry/api'
import {
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_RABBITMQ_DESTINATION_ROUTING_KEY,
  ATTR_MESSAGING_SYSTEM,
} from '@opentelemetry/semantic-conventions/incubating'
import { unpackAccessBatch } from './access-batch'
import { EXCHANGE } from './amqp'
import type { Trace } from './context'
import type { Admitted } from './consumer-support'
import type { CloudEvent } from './events'
import { SpanKind, parseTrace, startSpan, tracingOn, type Span, type TraceText } from './tracing'

/** The trace context of each event of a batch: the span that handles it. */
export type EventTraces = (event: CloudEvent) => Trace

/** The most links a batch's span has (the SDK's default limit). */
const MAX_LINKS = 128

/** The message's `traceparent` header, set by the relay's publish span (outbox.ts), if any. */
function fromHeaders(d: Admitted): TraceText | null {
  const h = d.msg.properties.headers as Record<string, unknown> | undefined
  if (typeof h?.traceparent !== 'string') return null
  return {
    traceparent: h.traceparent,
    tracestate: typeof h.tracestate === 'string' ? h.tracestate : undefined,
  }
}

/**
 * An access batch (`http.batch`) holds the events of many requests, each of its own trace: its
 * span links to them (while spans are recorded) instead of having a parent.
 */
function linksOf(event: CloudEvent): Link[] | undefined {
  if (event.type !== 'http.batch') return undefined
  try {
    const links: Link[] = []
    for (const e of unpackAccessBatch(event)) {
      const context = parseTrace(e)
      if (context) links.push({ context })
      if (links.length === MAX_LINKS) break
    }
    return links
  } catch {
    return undefined // the handler refuses it, with its reason
  }
}

/**
 * A consumer's span for handling one event (messaging semantic conventions, `process`): the child
 * of the relay's publish span (the message's `traceparent` header) or, without one, of the span
 * that made the event (its `traceparent` extension); a new trace when it has neither.
 */
export function consumerSpan(d: Admitted, queue: string, startTime?: number): Span {
  const e = d.event
  const on = tracingOn()
  return startSpan(`process ${queue}`, {
    kind: SpanKind.CONSUMER,
    parent: fromHeaders(d) ?? e,
    startTime,
    links: on ? linksOf(e) : undefined,
    attributes: on
      ? {
          [ATTR_MESSAGING_SYSTEM]: 'rabbitmq',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
          [ATTR_MESSAGING_OPERATION_NAME]: 'process',
          [ATTR_MESSAGING_DESTINATION_NAME]: EXCHANGE,
          [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: queue,
          [ATTR_MESSAGING_RABBITMQ_DESTINATION_ROUTING_KEY]: d.msg.fields.routingKey,
          [ATTR_MESSAGING_MESSAGE_ID]: e.id,
          'clinic.request_id': e.requestid ?? '',
        }
      : undefined,
  })
}
