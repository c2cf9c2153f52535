import {
  AppError,
  languageOf,
  signLink,
  type Ctx,
  type InternalMessage,
  type Refusal,
} from '@clinic/platform/core'
import type { ConsentStore } from './consent-store'
import type { LinkSender } from './consent-links'
import { CONSENT_LINK } from './link-kinds'

/**
 * comms as documents sees it (app.ts: the platform's typed client, `services.comms.send`): queues a
 * message to a patient, or their guardian, on the caller's behalf, or says why not.
 */
export interface MessageSender {
  send(
    ctx: Ctx,
    message: InternalMessage,
  ): Promise<{ outcome: 'done' } | { outcome: string; refusal: Refusal }>
}

const TEXT = {
  es: (clinic: string | null, title: string, url: string) => ({
    subject: `${clinic ?? 'Consentimiento'}: ${title}`,
    body: `${clinic ?? 'La clínica'} le pide su consentimiento informado para: ${title}.\n\nLéalo y responda aquí: ${url}\n\nEl enlace caduca; si tiene dudas, contacte con ${clinic ?? 'la clínica'}.`,
  }),
  en: (clinic: string | null, title: string, url: string) => ({
    subject: `${clinic ?? 'Consent'}: ${title}`,
    body: `${clinic ?? 'The clinic'} asks for your informed consent to: ${title}.\n\nRead it and answer here: ${url}\n\nThe link expires; if you have questions, contact ${clinic ?? 'the clinic'}.`,
  }),
}

/**
 * Sends a consent's link `PUBLIC_BASE_URL/p/c/<token>` through comms, in the consent's language (es
 * or en; anything else es): comms chooses the recipient (the guardian of a patient who requires
 * one), the channel and address, and applies consent and quotas as to any message. What comms
 * refuses (no address, a quota) is the caller's answer, its status and code; the consent stays.
 */
export function consentLinkSender(o: {
  store: Pick<ConsentStore, 'templateOf'>
  messages: MessageSender
  /** DOCUMENTS_LINK_SECRET */
  secret: string
  /** PUBLIC_BASE_URL */
  publicBaseUrl: string
}): LinkSender {
  return {
    async send(ctx, { consent, linkId, patient, channel, clinic }) {
      const lang = languageOf(consent.language, ['es', 'en'] as const) ?? 'es'
      const token = await signLink(o.secret, CONSENT_LINK, {
        id: linkId,
        companyId: ctx.auth.companyId,
        consentId: consent.id,
        lang,
        exp: Math.floor(Date.parse(consent.expires_at) / 1000),
      })
      const url = `${o.publicBaseUrl.replace(/\/$/, '')}/p/c/${token}`
      const who = clinic.name ? (clinic.center ? `${clinic.name} (${clinic.center})` : clinic.name) : null
      const { title } = await o.store.templateOf(ctx.auth.companyId, consent)
      const text = TEXT[lang](who, title, url)
      // A subject only for an email: the channel asked for, else comms' choice (the patient's
      // preferred, else email when the recipient has an address for it).
      const recipient = patient.requires_legal_guardian ? patient.guardian : patient
      const email = (channel ?? patient.preferred_channel ?? (recipient?.email ? 'email' : 'sms')) === 'email'
      const sent = await o.messages.send(ctx, {
        patient_id: patient.id,
        ...(channel ? { channel } : {}),
        ...(email ? { subject: text.subject } : {}),
        body: text.body,
      })
      if ('refusal' in sent)
        throw new AppError({
          status: sent.refusal.status,
          code: sent.refusal.code,
          title: sent.refusal.title ?? 'The link could not be sent',
          detail: `the consent was stored, but its link could not be sent: ${sent.refusal.detail ?? sent.refusal.code}`,
        })
    },
  }
}
