import { linkCtx, openLink, type CloudEvent, type Ctx } from '@clinic/platform/core'
import { linkViewedEvent } from '../events/link-events'
import type { AppointmentDirectory, AppointmentInfo } from './directories'
import { APPOINTMENT_LINK, type AppointmentLink } from './link-kinds'

/**
 * Patient links (DESIGN.md section 12): `PUBLIC_BASE_URL/p/a/<token>` from a reminder, no API
 * token; the signed token names the company, the appointment and the page's language, and expires
 * at the appointment's start. The company in the token is the only scope of every lookup, so a
 * token of one company never reaches another's appointment.
 */

/** The actor of every answer given through a link (the audit trail shows it). */
export const LINK_ACTOR = 'patient-link'
export const LINK_ACTIONS = ['confirm', 'cancel'] as const
export type LinkAction = (typeof LINK_ACTIONS)[number]

/** What the appointments service made of an answer. */
export type LinkAnswer =
  | { outcome: 'done'; appointment: AppointmentInfo }
  | { outcome: 'not_found' }
  /** Its status allows no such answer (cancelled, checked in, completed...): 409 there. */
  | { outcome: 'not_possible' }

export interface AppointmentResponder {
  /** Confirm or cancel the appointment of the caller's company on the patient's behalf. */
  respond(ctx: Ctx, appointmentId: string, action: LinkAction): Promise<LinkAnswer>
}

export interface LinkUse {
  tokenId: string
  appointmentId: string
  action: LinkAction
}

export interface LinkUseStore {
  /** What the token was used for, or null when it was not. */
  usedFor(companyId: number, tokenId: string): Promise<LinkAction | null>
  /**
   * Records the use and runs `act` in the same transaction, committed only when `act` says `keep`:
   * a second use of the token waits for the first and then finds it (`used`, what it was used
   * for); a use whose `act` throws or does not keep is rolled back and the token stays usable.
   */
  useOnce<T>(
    companyId: number,
    use: LinkUse,
    act: () => Promise<{ keep: boolean; value: T }>,
  ): Promise<{ used: LinkAction } | { value: T }>
  /** Puts a view of a link's page on the audit trail (its event, through the company's outbox). */
  recordView(companyId: number, event: CloudEvent): Promise<void>
}

export interface LinkDeps {
  /** COMMS_LINK_SECRET; without it every link is invalid. */
  secret: string | undefined
  clock: () => Date
  appointments: AppointmentDirectory & AppointmentResponder
  uses: LinkUseStore
}

/** What the page shows (pages/appointment-page.ts renders it, and the route's failures). */
export type LinkPage =
  | { kind: 'invalid' }
  | { kind: 'expired' }
  | { kind: 'used'; action: LinkAction }
  | { kind: 'not_found' }
  /** Nothing can be answered in its status (null: it could not be read again). */
  | { kind: 'closed'; appointment: AppointmentInfo | null }
  /** `actions`: what the patient may still answer (a confirmed appointment: cancel only). */
  | { kind: 'open'; appointment: AppointmentInfo; actions: LinkAction[] }
  | { kind: 'done'; action: LinkAction; appointment: AppointmentInfo }

/** The request's logger and id: the ctx of a link is made from them and the token's company. */
export type LinkRequest = Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'> & { token: string }

const isLinkAction = (v: unknown): v is LinkAction => LINK_ACTIONS.includes(v as LinkAction)

/** What a status still allows through a link. */
export const answerable = (status: string): LinkAction[] =>
  status === 'scheduled' ? ['confirm', 'cancel'] : status === 'confirmed' ? ['cancel'] : []

/**
 * `GET /p/a/<token>`: the appointment and what may be answered, or why nothing can be. Every view of
 * a valid link is on the audit trail (`comms.patient_link.viewed`, actor `patient-link`) before the
 * page is shown: a view that cannot be recorded is not shown (503 page). An altered or expired token
 * names no company that can be trusted, so its page is only logged.
 */
export async function openPatientLink(deps: LinkDeps, req: LinkRequest): Promise<LinkPage> {
  const checked = await openLink(deps.secret, APPOINTMENT_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const page = await linkPage(deps, ctx, link)
  const view = { appointmentId: link.appointmentId, linkId: link.id, page: page.kind }
  await deps.uses.recordView(link.companyId, linkViewedEvent(ctx, view))
  return page
}

async function linkPage(deps: LinkDeps, ctx: Ctx, link: AppointmentLink): Promise<LinkPage> {
  const used = await deps.uses.usedFor(link.companyId, link.id)
  if (used) return { kind: 'used', action: used }
  const appointment = await deps.appointments.find(ctx, link.appointmentId)
  if (!appointment) return { kind: 'not_found' }
  const actions = answerable(appointment.status)
  return actions.length ? { kind: 'open', appointment, actions } : { kind: 'closed', appointment }
}

/**
 * `POST /p/a/<token>`: the answer, once per token. The use is recorded in a transaction that is
 * committed only after the appointments service has answered 2xx: a failed or refused call leaves
 * the token usable, and a double click waits for the first click and then finds the token used.
 * A failure to reach the appointments service (or the database) is thrown (503 page).
 */
export async function answerPatientLink(
  deps: LinkDeps,
  req: LinkRequest & { action: unknown },
): Promise<LinkPage> {
  const checked = await openLink(deps.secret, APPOINTMENT_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const action = req.action
  if (!isLinkAction(action)) return { kind: 'invalid' }
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const use = { tokenId: link.id, appointmentId: link.appointmentId, action }
  const result = await deps.uses.useOnce(link.companyId, use, async () => {
    const answer = await deps.appointments.respond(ctx, link.appointmentId, action)
    return { keep: answer.outcome === 'done', value: answer }
  })
  if ('used' in result) return { kind: 'used', action: result.used }
  const answer = result.value
  ctx.log.info(
    { appointment_id: link.appointmentId, link_id: link.id, action, outcome: answer.outcome },
    'patient link answered',
  )
  if (answer.outcome === 'done') return { kind: 'done', action, appointment: answer.appointment }
  if (answer.outcome === 'not_found') return { kind: 'not_found' }
  // Show it as it is now, if it can still be read; the page says what to do either way.
  const now = await deps.appointments.find(ctx, link.appointmentId).catch(() => null)
  return { kind: 'closed', appointment: now }
}
