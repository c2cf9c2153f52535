import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { MessagesRepository } from './db/repositories/messages-repository'
import type { AppointmentDirectory } from './domain/appointment-directory'
import type { PatientDirectory } from './domain/patient-directory'
import { RemindersRepository } from './db/repositories/reminders-repository'
import { messageRoutes } from './routes/messages'
import { reminderRoutes } from './routes/reminders'
import { twilioWebhookRoutes, type TwilioWebhookOptions } from './routes/twilio-webhook'

/** knex: connected as the service role (row-level security applies), search_path = comms. */
export interface Deps extends ServiceDeps {
  patients: PatientDirectory
  appointments: AppointmentDirectory
  /** Twilio status callbacks; without an auth token every callback is refused (403). */
  twilio?: Omit<TwilioWebhookOptions, 'store'>
}

/** The comms service: queue messages to patients or guardians, follow their delivery. */
export async function buildApp(deps: Deps) {
  const store = new MessagesRepository(deps.knex)
  const app = await serviceApp(deps, {
    service: 'comms',
    description:
      'Messages to patients and their guardians by email (SMTP) and SMS (Twilio), delivered asynchronously.',
  })
  await app.register(messageRoutes, {
    store,
    patients: deps.patients,
    appointments: deps.appointments,
  })
  await app.register(twilioWebhookRoutes, { store, ...deps.twilio })
  await app.register(reminderRoutes, { store: new RemindersRepository(deps.knex) })
  return app
}
