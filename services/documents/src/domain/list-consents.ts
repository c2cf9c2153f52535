import { keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { Consent, ListConsentsInput } from '../schemas/consent'
import { CONSENT_KEYSET } from './consent-keysets'
import type { ConsentStore } from './consent-store'

/** Newest first, filtered by patient, template key, status and appointment. */
export function listConsents(
  ctx: Ctx,
  store: ConsentStore,
  input: ListConsentsInput,
): Promise<Page<Consent>> {
  return keysetPage(input, {
    keyset: CONSENT_KEYSET,
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, {
        ...page,
        centers,
        patientId: input.patient_id?.toLowerCase(),
        templateKey: input.template_key,
        status: input.status,
        appointmentId: input.appointment_id?.toLowerCase(),
      }),
  })
}
