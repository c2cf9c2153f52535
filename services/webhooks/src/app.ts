import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { EndpointsRepository } from './db/repositories/endpoints-repository'
import { readFeed } from './db/repositories/feed-repository'
import type { AddressPolicy } from './delivery/address-policy'
import type { FeedSource } from './domain/feed'
import type { SecretBox } from './domain/secrets'
import { endpointRoutes } from './routes/endpoints'
import { feedRoutes } from './routes/feed'

/** knex: connected as the service role (row-level security applies), search_path = webhooks. */
export interface Deps extends ServiceDeps {
  box: SecretBox
  policy: AddressPolicy
  /** Wakes long polls when a company's feed grows (Notifications). */
  feedChanged: FeedSource['changed']
  /** What time it is for replays, tests and rotation (tests move it); default the system clock. */
  clock?: () => Date
}

/** The webhooks service: endpoints, their delivery log, and the change feed. */
export async function buildApp(deps: Deps) {
  const store = new EndpointsRepository(deps.knex)
  const app = await serviceApp(deps, {
    service: 'webhooks',
    description:
      'Signed webhooks (Standard Webhooks) of every change to the endpoints a company registers, with a lasting delivery log; and the change feed of the same events.',
  })
  const clock = deps.clock ?? (() => new Date())
  await app.register(endpointRoutes, { store, box: deps.box, policy: deps.policy, clock })
  const feed: FeedSource = {
    read: (companyId, f) => readFeed(deps.knex, companyId, f),
    changed: deps.feedChanged,
  }
  await app.register(feedRoutes, { feed })
  return app
}
