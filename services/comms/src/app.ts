import { serviceApp, type ServiceDeps, type ServicesOf } from '@clinic/platform'
import { MessagesRepository } from './db/repositories/messages-repository'
import type { AppointmentDirectory, OfferDirectory } from './domain/directories'
import type { AppointmentResponder } from './domain/patient-links'
import type { Clock } from './clock'
import { LinkUsesRepository } from './db/repositories/link-uses-repository'
import { patientLinkRoutes } from './routes/patient-links'
import type { PatientDirectory } from './domain/directories'
import type { MessagingLimits } from './domain/queue-message'
import { admissionMetrics } from './metrics'
import { RemindersRepository } from './db/repositories/reminders-repository'
import { PreferencesRepository } from './db/repositories/preferences-repository'
import { communicationFhirRoutes } from './routes/fhir'
import { messageRoutes } from './routes/messages'
import { preferenceRoutes } from './routes/preferences'
import { twilioInboundRoutes } from './routes/twilio-inbound'
import type { InboundMessageTimes } from './domain/sms-keywords'
import { unsubscribeRoutes } from './routes/unsubscribe'
import { reminderRoutes } from './routes/reminders'
import { twilioWebhookRoutes, type TwilioWebhookOptions } from './routes/twilio-webhook'
import { sendWindowRoutes } from './routes/send-window'
import { waitlistLinkRoutes } from './routes/waitlist-links'

/**
 * The patients and appointments services as comms' domain sees them, over the platform's typed
 * clients (`services`): a patient's contact, an appointment, a patient's answer to one, a
 * waitlist offer and the patient's answer to it.
 */
export function directoriesOf(services: ServicesOf<'comms'>): {
  patients: PatientDirectory
  appointments: AppointmentDirectory & AppointmentResponder
  offers: OfferDirectory
} {
  const { patients, appointments } = services
  const outcomes = { not_found: 'not_found', invalid_transition: 'not_possible' } as const
  return {
    patients: { find: patients.lookUp },
    appointments: {
      find: appointments.lookUp,
      respond: async (ctx, id, action) => {
        const answer = await appointments.respond(ctx, id, { action })
        return answer.outcome === 'done'
          ? { outcome: 'done', appointment: answer.answer }
          : { outcome: outcomes[answer.outcome] }
      },
    },
    offers: {
      find: appointments.waitlistOffer,
      answer: async (ctx, id, action) => {
        const answer = await appointments.answerOffer(ctx, id, { action })
        return answer.outcome === 'done' ? answer.answer : null
      },
    },
  }
}

/** knex: connected as the service role (row-level security applies), search_path = comms. */
export interface Deps extends ServiceDeps {
  /** Its typed clients of the services it calls (services.json `calls`: patients, appointments). */
  services: ServicesOf<'comms'>
  /** The messaging limits of every queued message (config.ts messagingLimits). */
  limits: MessagingLimits
  /** Twilio status callbacks; without an auth token every callback is refused (403). */
  twilio?: Omit<TwilioWebhookOptions, 'store'> & {
    /** Incoming SMS (consent keywords): config.ts twilioInboundUrl; unset: every one is refused (403). */
    inboundUrl?: string
    /** Twilio's Messages API, dating incoming messages (TWILIO_ACCOUNT_SID); unset: arrival order. */
    times?: InboundMessageTimes
  }
  /** PUBLIC_BASE_URL and COMMS_LINK_SECRET (patient and unsubscribe links); without them every link is invalid. */
  links?: { baseUrl: string; secret: string }
  /** What time it is for patient links' expiry (server.ts: COMMS_CLOCK_FILE); default the system clock. */
  clock?: Clock
}

/** The comms service: queue messages to patients or guardians, follow their delivery. */
export async function buildApp(deps: Deps) {
  const store = new MessagesRepository(deps.knex)
  const { patients, appointments, offers } = directoriesOf(deps.services)
  const app = await serviceApp(deps, {
    service: 'comms',
    description:
      'Messages to patients and their guardians by email (SMTP) and SMS (Twilio), delivered asynchronously.',
  })
  await app.register(messageRoutes, {
    store,
    patients,
    appointments,
    limits: deps.limits,
    metrics: admissionMetrics(app.metrics),
  })
  await app.register(communicationFhirRoutes, { store })
  await app.register(twilioWebhookRoutes, { store, ...deps.twilio })
  const preferences = new PreferencesRepository(deps.knex)
  await app.register(preferenceRoutes, { store: preferences })
  const clock = deps.clock ?? (() => new Date())
  await app.register(twilioInboundRoutes, { store: preferences, ...deps.twilio, clock })
  await app.register(unsubscribeRoutes, { store: preferences, secret: deps.links?.secret })
  const reminders = new RemindersRepository(deps.knex)
  await app.register(reminderRoutes, { store: reminders })
  await app.register(sendWindowRoutes, { store: reminders })
  const uses = new LinkUsesRepository(deps.knex)
  await app.register(patientLinkRoutes, { secret: deps.links?.secret, clock, appointments, uses })
  await app.register(waitlistLinkRoutes, { secret: deps.links?.secret, clock, offers, views: uses })
  return app
}
