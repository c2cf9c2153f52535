import { AppError, UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService } from '@clinic/platform/http'
import type { LinkSender } from '../domain/consent-links'
import { signConsentLink } from '../links/tokens'
import type { ClientOptions } from './patients-client'

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
 * Sends a consent's link through comms (`POST /internal/comms/send`, on behalf of the caller): comms
 * chooses the recipient (the guardian of a patient who requires one), the channel and address, and
 * applies consent and quotas as to any message. Its 4xx (no address, a quota) is the caller's
 * answer; down or odd is 503.
 */
export class CommsLinkSender implements LinkSender {
  constructor(
    private readonly o: ClientOptions & {
      secret: string
      publicBaseUrl: string
      templateTitle: (ctx: Ctx, consentId: string) => Promise<string>
    },
  ) {}

  async send(
    ctx: Ctx,
    { consent, linkId, patient, channel, clinic }: Parameters<LinkSender['send']>[1],
  ): Promise<void> {
    const lang = consent.language.startsWith('en') ? 'en' : 'es'
    const token = await signConsentLink(this.o.secret, {
      id: linkId,
      companyId: ctx.auth.companyId,
      consentId: consent.id,
      lang,
      exp: Math.floor(Date.parse(consent.expires_at) / 1000),
    })
    const url = `${this.o.publicBaseUrl.replace(/\/$/, '')}/p/c/${token}`
    const who = clinic.name ? (clinic.center ? `${clinic.name} (${clinic.center})` : clinic.name) : null
    const text = TEXT[lang](who, await this.o.templateTitle(ctx, consent.id), url)
    // A subject only for an email: the channel asked for, else comms' choice (the patient's
    // preferred, else email when the recipient has an address for it).
    const recipient = patient.requires_legal_guardian ? patient.guardian : patient
    const email = (channel ?? patient.preferred_channel ?? (recipient?.email ? 'email' : 'sms')) === 'email'
    const answer = await callService<{ code?: string; detail?: string; status?: number; title?: string }>(
      ctx,
      this.o.signer,
      {
        service: 'comms',
        baseUrl: this.o.baseUrl,
        method: 'POST',
        path: '/internal/comms/send',
        timeoutMs: this.o.timeoutMs,
        body: {
          patient_id: patient.id,
          ...(channel ? { channel } : {}),
          ...(email ? { subject: text.subject } : {}),
          body: text.body,
        },
      },
    )
    if (answer.status === 202) return
    if (answer.status >= 400 && answer.status < 500 && answer.body?.code)
      throw new AppError({
        status: answer.status,
        code: answer.body.code,
        title: answer.body.title ?? 'The link could not be sent',
        detail: `the consent was stored, but its link could not be sent: ${answer.body.detail ?? answer.body.code}`,
      })
    ctx.log.warn({ upstream: 'comms', status: answer.status }, 'unexpected answer to a consent link send')
    throw new UpstreamUnavailable('The comms service is unavailable; retry shortly')
  }
}
