import { fhirRoutes } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import {
  readFhirCommunication,
  searchFhirCommunications,
  type CommunicationStore,
} from '../domain/fhir-communication'

/** FHIR R4 `Communication` read and search (DESIGN.md section 19; scope comms:read, at the gateway). */
export async function communicationFhirRoutes(
  app: FastifyInstance,
  { store }: { store: CommunicationStore },
) {
  await fhirRoutes(app, [
    {
      type: 'Communication',
      read: (ctx, id) => readFhirCommunication(ctx, store, id),
      search: (ctx, search) => searchFhirCommunications(ctx, store, search),
    },
  ])
}
