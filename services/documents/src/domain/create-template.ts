import { uuidv7, type Ctx } from '@clinic/platform/core'
import type { ConsentTemplate, CreateTemplateInput } from '../schemas/consent'
import { centerOfNew, textHash } from './consent-rules'
import type { ConsentStore } from './consent-store'

/**
 * POST /consents/templates: a new version of a template key and language; older versions stay
 * readable. Its center is the body's `codalmacen`, else the query's, else none (centerOfNew).
 */
export async function createTemplate(
  ctx: Ctx,
  store: ConsentStore,
  input: { body: CreateTemplateInput; queryCenter?: string },
): Promise<ConsentTemplate> {
  const { codalmacen: bodyCenter, ...fields } = input.body
  const codalmacen = centerOfNew(ctx, bodyCenter, input.queryCenter)
  const template = await store.transaction(ctx.auth.companyId, (tx) =>
    tx.insertTemplate(uuidv7(), { ...fields, codalmacen, text_sha256: textHash(fields.body) }),
  )
  ctx.log.info(
    { template_id: template.id, key: template.key, version: template.version },
    'consent template created',
  )
  return template
}
