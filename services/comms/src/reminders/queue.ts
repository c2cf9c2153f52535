import { systemQueue, type SystemQueueOptions } from '../system-queue'
import type { QueueReminderMessage } from './worker'

/**
 * A reminder's message goes the way of every message (queueMessage): destination, consent and
 * the messaging limits, then the row with its `comms.message.queued` event, in the reminder's
 * transaction. Always to whom the patient's record says (the guardian where one is required).
 */
export const reminderQueue = (o: SystemQueueOptions): QueueReminderMessage =>
  systemQueue(o, 'appointment_reminder')
