import { registryCounter } from '@clinic/platform'
import type { Registry } from 'prom-client'
import type { AdmissionMetrics } from './domain/queue-message'

const ADMITTED = 'comms_messages_admitted_total'

/**
 * `comms_messages_admitted_total{channel, outcome}` on the service's registry (`app.metrics`, served
 * at /metrics): what became of each message offered to the send path (queued, suppressed,
 * quota_exceeded, destination_not_allowed), sends and reminders alike. One counter per registry.
 */
export function admissionMetrics(registry: Registry): AdmissionMetrics {
  const counter = registryCounter(registry, {
    name: ADMITTED,
    help: 'Messages offered to the send path, by channel and outcome (queued, suppressed, quota_exceeded, destination_not_allowed)',
    labelNames: ['channel', 'outcome'],
  })
  return { admitted: (channel, outcome) => counter.inc({ channel, outcome }) }
}
