import { fhirRoutes } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import type { ExamFhirStore } from '../domain/exam-store'
import {
  readCondition,
  readEncounter,
  readObservation,
  readVisionPrescription,
  searchConditions,
  searchEncounters,
  searchObservations,
  searchVisionPrescriptions,
} from '../domain/fhir-resources'

/** FHIR R4 `Encounter`, `Observation`, `Condition`, `VisionPrescription` read and search (DESIGN 19). */
export async function clinicalFhirRoutes(app: FastifyInstance, { store }: { store: ExamFhirStore }) {
  await fhirRoutes(app, [
    {
      type: 'Encounter',
      read: (ctx, id) => readEncounter(ctx, store, id),
      search: (ctx, search) => searchEncounters(ctx, store, search),
    },
    {
      type: 'Observation',
      read: (ctx, id) => readObservation(ctx, store, id),
      search: (ctx, search) => searchObservations(ctx, store, search),
    },
    {
      type: 'Condition',
      read: (ctx, id) => readCondition(ctx, store, id),
      search: (ctx, search) => searchConditions(ctx, store, search),
    },
    {
      type: 'VisionPrescription',
      read: (ctx, id) => readVisionPrescription(ctx, store, id),
      search: (ctx, search) => searchVisionPrescriptions(ctx, store, search),
    },
  ])
}
