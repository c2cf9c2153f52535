import { serviceApp, type ServiceDeps, type ServicesOf } from '@clinic/platform'
import { AppointmentsRepository } from './db/repositories/appointments-repository'
import { FhirRepository } from './db/repositories/fhir-repository'
import type { PatientDirectory } from './domain/directories'
import { DEFAULT_HOLD_TTL_SECONDS } from './config'
import { PractitionersRepository } from './db/repositories/practitioners-repository'
import { appointmentRoutes } from './routes/appointments'
import { appointmentFhirRoutes } from './routes/fhir'
import { calendarRoutes } from './routes/calendar'
import { practitionerRoutes } from './routes/practitioners'
import { internalRoutes } from './routes/internal'

/** knex: connected as the service role (row-level security applies), search_path = appointments. */
export interface Deps extends ServiceDeps {
  /** Its typed clients of the services it calls (services.json `calls`: patients). */
  services: ServicesOf<'appointments'>
  /** What time it is for holds and availability (tests move it); default the system clock. */
  clock?: () => Date
  /** How long a hold lives (HOLD_TTL_SECONDS); default 300. */
  holdTtlSeconds?: number
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
  await app.register(calendarRoutes, {
    store,
    patients,
    clock,
    holdTtlSeconds: deps.holdTtlSeconds ?? DEFAULT_HOLD_TTL_SECONDS,
  })
  await app.register(practitionerRoutes, { store: new PractitionersRepository(deps.knex) })
  await app.register(internalRoutes, { store })
  await app.register(appointmentFhirRoutes, { store: new FhirRepository(deps.knex), clock })
  return app
}
