import type { Ctx } from '@clinic/platform/core'
import type { Consent, GrantInput } from '../schemas/consent'
import { answerConsent } from './answer-consent'
import { nameOf, type ConsentDeps } from './consent-rules'
import { signerOnFile } from './signer-name'

/** In the clinic (POST /consents/{id}/grant): method in_person, with a witness. */
export function grantInPerson(
  ctx: Ctx,
  deps: ConsentDeps,
  input: { id: string; body: GrantInput; queryCenter?: string; ip: string | null; userAgent: string | null },
): Promise<Consent> {
  return answerConsent(
    ctx,
    deps,
    input.id,
    {
      accept: true,
      evidence: {
        signer_role: input.body.signer_role,
        signer_name: input.body.signer_name,
        method: 'in_person',
        witness: input.body.witness,
        ip: input.ip,
        user_agent: input.userAgent,
      },
      documentId: input.body.document_id,
    },
    {
      queryCenter: input.queryCenter,
      who: async (consent) => {
        const patient = await deps.patients.find(ctx, consent.patient_id)
        return { patientName: nameOf(patient), signerOnFile: signerOnFile(patient, consent.signer_role) }
      },
    },
  )
}
