import { serviceApp, type ServiceDeps, type ServicesOf } from '@clinic/platform'
import { AppointmentsRepository } from './db/repositories/appointments-repository'
import { FhirRepository } from './db/repositories/fhir-repository'
import type { PatientDirectory } from './domain/directories'
import { DEFAULT_HOLD_TTL_SECONDS, DEFAULT_WAITLIST_OFFER_MINUTES } from './config'
import { PractitionersRepository } from './db/repositories/practitioners-repository'
import { appointmentRoutes } from './routes/appointments'
import { appointmentFhirRoutes } from './routes/fhir'
import { calendarRoutes } from './routes/calendar'
import { practitionerRoutes } from './routes/practitioners'
import { internalRoutes } from './routes/internal'
import { SeriesRepository } from './db/repositories/series-repository'
import { seriesRoutes } from './routes/series'
import { WaitlistRepository } from './db/repositories/waitlist-repository'
import { waitlistRoutes } from './routes/waitlist'
import type { OfferDeps } from './domain/waitlist-offers'

/** knex: connected as the service role (row-level security applies), search_path = appointments. */
export interface Deps extends ServiceDeps {
  /** Its typed clients of the services it calls (services.json `calls`: patients). */
  services: ServicesOf<'appointments'>
  /** What time it is for holds and availability (tests move it); default the system clock. */
  clock?: () => Date
  /** How long a hold lives (HOLD_TTL_SECONDS); default 300. */
  holdTtlSeconds?: number
  /** How long a waitlist offer holds its slot (WAITLIST_OFFER_MINUTES); default 30. */
  offerMinutes?: number
}

/** What the waitlist's offers need: its store, the clock, and comms' send window. */
export function waitlistDeps(deps: Deps): OfferDeps {
  const clock = deps.clock ?? (() => new Date())
  return {
    store: new WaitlistRepository(deps.knex, new AppointmentsRepository(deps.knex, clock)),
    clock,
    offerMinutes: deps.offerMinutes ?? DEFAULT_WAITLIST_OFFER_MINUTES,
    async sendWindow(ctx, at, timeZone) {
      const r = await deps.services.comms.sendWindow(ctx, { at: at.toISOString(), time_zone: timeZone })
      return r.outcome === 'done' ? new Date(r.answer.at) : at
    },
  }
}

/** The appointments service: book, list, read, move, confirm, cancel and check in appointments. */
export async function buildApp(deps: Deps) {
  const app = await serviceApp(deps, {
    service: 'appointments',
    description:
      'Appointments of a company: booking without double booking, the state machine (confirm, check in, complete, cancel, no-show), the day schedule of a center, practitioners with working hours and time off, free slots and holds.',
  })
  const clock = deps.clock ?? (() => new Date())
  const patients: PatientDirectory = {
    find: deps.services.patients.lookUp,
  }
  const store = new AppointmentsRepository(deps.knex, clock)
  await app.register(appointmentRoutes, { store, patients })
  await app.register(seriesRoutes, { store: new SeriesRepository(deps.knex, store, clock), patients, clock })
  await app.register(calendarRoutes, {
    store,
    patients,
    clock,
    holdTtlSeconds: deps.holdTtlSeconds ?? DEFAULT_HOLD_TTL_SECONDS,
  })
  await app.register(practitionerRoutes, { store: new PractitionersRepository(deps.knex) })
  const waitlist = waitlistDeps({ ...deps, clock })
  await app.register(waitlistRoutes, { store: waitlist.store, patients })
  await app.register(internalRoutes, { store, waitlist })
  await app.register(appointmentFhirRoutes, { store: new FhirRepository(deps.knex), clock })
  return app
}
