import { fhirRoutes } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import {
  readFhirAppointment,
  readFhirPractitioner,
  readFhirSchedule,
  readFhirSlot,
  searchFhirAppointments,
  searchFhirPractitioners,
  searchFhirSchedules,
  searchFhirSlots,
} from '../domain/fhir-resources'
import type { FhirStore } from '../domain/fhir-store'

/**
 * FHIR R4 Practitioner, Schedule, Slot and Appointment read and search (DESIGN.md section 19;
 * README "FHIR"). `clock`: what time it is for slots (the past, live holds).
 */
export async function appointmentFhirRoutes(
  app: FastifyInstance,
  { store, clock }: { store: FhirStore; clock: () => Date },
) {
  await fhirRoutes(app, [
    {
      type: 'Practitioner',
      read: (ctx, id) => readFhirPractitioner(ctx, store, id),
      search: (ctx, search) => searchFhirPractitioners(ctx, store, search),
    },
    {
      type: 'Schedule',
      read: (ctx, id) => readFhirSchedule(ctx, store, id),
      search: (ctx, search) => searchFhirSchedules(ctx, store, search),
    },
    {
      type: 'Slot',
      read: (ctx, id) => readFhirSlot(ctx, store, id, clock()),
      search: (ctx, search) => searchFhirSlots(ctx, store, search, clock()),
    },
    {
      type: 'Appointment',
      read: (ctx, id) => readFhirAppointment(ctx, store, id),
      search: (ctx, search) => searchFhirAppointments(ctx, store, search),
    },
  ])
}
