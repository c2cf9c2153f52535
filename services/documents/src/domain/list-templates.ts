import { keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { ConsentTemplate, ListTemplatesInput } from '../schemas/consent'
import { TEMPLATE_KEYSET } from './consent-keysets'
import type { ConsentStore } from './consent-store'

/** Newest first; a token limited to centers, or `codalmacen`, sees those centers' templates only. */
export function listTemplates(
  ctx: Ctx,
  store: ConsentStore,
  input: ListTemplatesInput,
): Promise<Page<ConsentTemplate>> {
  return keysetPage(input, {
    keyset: TEMPLATE_KEYSET,
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.listTemplates(ctx.auth.companyId, { ...page, centers, key: input.key, language: input.language }),
  })
}
