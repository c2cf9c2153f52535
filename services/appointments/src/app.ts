import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { AppointmentsRepository } from './db/repositories/appointments-repository'
import type { PatientDirectory } from './domain/patient-directory'
import { appointmentRoutes } from './routes/appointments'
import { internalRoutes } from './routes/internal'

/** knex: connected as the service role (row-level security applies), search_path = appointments. */
export interface Deps extends ServiceDeps {
  /** Does a patient exist in the caller's company (the patients service, over internal HTTP). */
  patients: PatientDirectory
}

/** The appointments service: book, list, read, move, confirm, cancel and check in appointments. */
export async function buildApp(deps: Deps) {
  const app = await serviceApp(deps, {
    service: 'appointments',
    description:
      'Appointments of a company: booking without double booking, the state machine (confirm, check in, complete, cancel, no-show) and the day schedule of a center.',
  })
  const store = new AppointmentsRepository(deps.knex)
  await app.register(appointmentRoutes, { store, patients: deps.patients })
  await app.register(internalRoutes, { store })
  return app
}
