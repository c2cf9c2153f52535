import { visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import type { ConsentTemplate } from '../schemas/consent'
import type { ConsentStore } from './consent-store'

/** One version of a template, visible under `?codalmacen=` and the token's centers. */
export async function getTemplate(
  ctx: Ctx,
  store: ConsentStore,
  input: { id: string; queryCenter?: string },
): Promise<ConsentTemplate> {
  const centers = visibleCenters(ctx.auth, input.queryCenter)
  return visibleRow(
    centers,
    await store.findTemplate(ctx.auth.companyId, input.id.toLowerCase()),
    'No such consent template',
  )
}
