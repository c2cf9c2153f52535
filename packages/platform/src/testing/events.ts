import amqplib from 'amqplib'
import type { Knex } from 'knex'
import { EXCHANGE } from '../amqp'
import type { CloudEvent, EventData } from '../events'

/**
 * The data of an appointment event (created, updated or checked_in: the last two share the
 * shape, the first is a subset) with obviously fake values, for envelope, consumer and audit tests.
 */
export function appointmentEventData(
  overrides: Partial<EventData<'appointment.checked_in'>> = {},
): EventData<'appointment.checked_in'> {
  return {
    id: '0190c5a0-0000-7000-8000-0000000000aa',
    patient_id: '0190c5a0-0000-7000-8000-0000000000bb',
    codalmacen: 'ALM1',
    practitioner: 'dra-ejemplo',
    starts_at: '2026-11-22T09:30:00.000Z',
    ends_at: '2026-11-22T10:00:00.000Z',
    time_zone: 'Europe/Madrid',
    status: 'checked_in',
    checked_in_at: '2026-11-22T09:25:00.000Z',
    version: 2,
    changes: ['status', 'checked_in_at'],
    old_status: 'scheduled',
    new_status: 'checked_in',
    ...overrides,
  }
}

/** An event as a service wrote it to its outbox (read as the schema owner, any company). */
export interface OutboxRow {
  type: string
  payload: Omit<CloudEvent, 'data'> & { data: Record<string, unknown> & { changes?: string[] } }
}

/** The outbox rows about one resource (`subject`) of one company, oldest first. */
export async function outboxOf(owner: Knex, companyId: number, subject: string): Promise<OutboxRow[]> {
  return owner('outbox')
    .where({ idempresa: companyId })
    .whereRaw(`payload->>'subject' = ?`, [subject])
    .orderBy('id')
    .select('type', 'payload')
}

/**
 * Every event published on `clinic.events` with `routingKey` (a topic pattern) from now on, in
 * arrival order: what a service really got out, whatever its outbox keeps.
 */
export async function tapEvents(amqpUrl: string, routingKey = '#') {
  const conn = await amqplib.connect(amqpUrl)
  const ch = await conn.createChannel()
  await ch.assertExchange(EXCHANGE, 'topic', { durable: true })
  const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true })
  await ch.bindQueue(queue, EXCHANGE, routingKey)
  const messages: Array<{ event: CloudEvent; msg: import('amqplib').ConsumeMessage }> = []
  await ch.consume(
    queue,
    (msg) => {
      if (!msg) return
      try {
        messages.push({ event: JSON.parse(msg.content.toString('utf8')) as CloudEvent, msg })
      } catch {
        // Not JSON (another test's poison message on the shared vhost): not an event.
      }
    },
    { noAck: true },
  )
  return {
    messages,
    /** Ids received for one company, with repeats. */
    idsFor: (companyId: number) =>
      messages.filter((m) => m.event.idempresa === companyId).map((m) => m.event.id),
    /** The events about one resource (CloudEvents `subject`), in arrival order. */
    about: (subject: string) => messages.filter((m) => m.event.subject === subject).map((m) => m.event),
    close: async () => {
      await conn.close().catch(() => undefined)
    },
  }
}
