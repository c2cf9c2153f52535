import {
  startConsumer,
  traceIdOf,
  type Amqp,
  type CloudEvent,
  type Consumer,
  type EventOrigins,
  type Trace,
} from '@clinic/platform'
import { setCompany } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { AppointmentDirectory } from '../domain/directories'
import { REMINDED_STATUSES, type AppointmentSlot } from './plan'
import type { ReminderStore } from './reminder-store'
import { systemCtx } from '../domain/system-ctx'
import { REMINDER_ACTOR } from './worker'

export const REMINDERS_QUEUE = 'comms.reminders'

/** Changes of an `appointment.updated` that touch reminders. */
const TIMING = ['starts_at', 'ends_at', 'time_zone', 'status']

/** An appointment as its booking event or the internal lookup has it. */
type SlotData = Omit<AppointmentSlot, 'active'>

const slotFrom = (a: SlotData): AppointmentSlot => ({
  id: a.id,
  patient_id: a.patient_id,
  codalmacen: a.codalmacen,
  starts_at: a.starts_at,
  time_zone: a.time_zone,
  status: a.status,
  version: a.version,
  active: REMINDED_STATUSES.includes(a.status),
})

/**
 * The appointment's state an event asks reminders to follow: a booking carries its slot; a move,
 * a status change or a check-in is read from the appointments service (the update event names the
 * changed fields, not their values). Null: nothing to do.
 */
async function slotOf(
  event: CloudEvent,
  appointments: AppointmentDirectory,
  log: Logger,
  trace: Trace,
): Promise<AppointmentSlot | null> {
  const data = event.data as Partial<SlotData> & { changes?: string[]; id?: string }
  if (typeof data.id !== 'string') return null
  if (event.type === 'appointment.created') return slotFrom(data as SlotData)
  if (event.type === 'appointment.updated' && !data.changes?.some((c) => TIMING.includes(c))) return null
  const requestId = event.requestid
  const ctx = systemCtx(event.idempresa, REMINDER_ACTOR, {
    log: log.child({ request_id: requestId, trace_id: traceIdOf(trace.traceparent) }),
    requestId,
    ...trace,
  })
  const current = await appointments.find(ctx, data.id)
  // Gone (or never visible): whatever was pending for it stops.
  return current
    ? slotFrom(current)
    : { ...slotFrom(data as SlotData), status: 'gone', active: false, version: 2_147_483_647 }
}

/**
 * Schedules reminders from appointment events (DESIGN.md section 12): a booking or a move
 * (re)schedules them, a cancellation, no-show or check-in cancels those pending. Idempotent (the
 * platform consumer records each event id in the transaction that applies it) and ordered by the
 * appointment's version, so a late or repeated event never undoes a newer state.
 */
export function startReminderConsumer(o: {
  amqp: Amqp
  knex: Knex
  log: Logger
  origins: EventOrigins
  store: Pick<ReminderStore, 'reconcile'>
  appointments: AppointmentDirectory
  metrics?: Parameters<typeof startConsumer>[0]['metrics']
}): Promise<Consumer> {
  return startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: REMINDERS_QUEUE,
    origins: o.origins,
    metrics: o.metrics,
    // A series books its occurrences at once: their events are applied in one transaction a batch
    // (in delivery order; a failing batch goes again one event at a time).
    prefetch: 64,
    handle: (event, trx, trace) => applyAppointmentEvent(o, event, trx, trace),
    batch: {
      size: 32,
      lingerMs: 10,
      handle: async (events, trx, traces) => {
        for (const event of events) await applyAppointmentEvent(o, event, trx, traces(event))
      },
    },
  })
}

/**
 * One appointment event applied to its reminders, in the consumer's transaction `trx`; `trace`: the
 * consumer's span of it, which the lookup and the reminders it schedules are children of.
 */
export async function applyAppointmentEvent(
  o: { store: Pick<ReminderStore, 'reconcile'>; appointments: AppointmentDirectory; log: Logger },
  event: CloudEvent,
  trx: Knex.Transaction,
  trace: Trace = {},
): Promise<void> {
  const slot = await slotOf(event, o.appointments, o.log, trace)
  if (!slot) return
  await setCompany(trx, event.idempresa)
  await o.store.reconcile(trx, event.idempresa, slot, new Date(event.time), trace)
}
