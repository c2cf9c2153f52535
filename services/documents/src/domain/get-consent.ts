import { findVisible, type Ctx } from '@clinic/platform/core'
import type { Consent } from '../schemas/consent'
import type { ConsentStore } from './consent-store'

/** A consent of the caller's company, visible under `?codalmacen=` and the token's centers. */
export const getConsent = (
  ctx: Ctx,
  store: ConsentStore,
  input: { id: string; queryCenter?: string },
): Promise<Consent> =>
  findVisible(ctx, store, input.id.toLowerCase(), {
    queryCenter: input.queryCenter,
    notFound: 'No such consent',
  })
