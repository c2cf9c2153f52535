import type { Ctx } from '@clinic/platform/core'
import type { AppointmentStore, AppointmentTx, Span } from './appointment-store'
import { OutsideWorkingHours, SlotConflict } from './errors'

/** How far ahead a conflict looks for alternatives, and how many it offers (DESIGN.md section 11). */
export const ALTERNATIVES_DAYS = 14
export const ALTERNATIVES = 3

/**
 * A registered practitioner's hours, time off and active flag (DESIGN.md section 11): outside them
 * a booking is 422 outside_working_hours unless `override` (front desks may; the event says so).
 * Returns whether the booking is outside them (true only with `override`), and whether the
 * practitioner is registered at all (free-text practitioners book as before).
 */
export async function checkWorking(
  tx: Pick<AppointmentTx, 'workingCheck'>,
  span: Span,
  override: boolean | undefined,
  overridable = true,
): Promise<{ outsideHours: boolean; registered: boolean }> {
  const why = await tx.workingCheck(span)
  if (why === null) return { outsideHours: false, registered: false }
  if (why === 'ok') return { outsideHours: false, registered: true }
  if (!override || !overridable) throw new OutsideWorkingHours(why, overridable)
  return { outsideHours: true, registered: true }
}

/**
 * A slot conflict as the caller may see it: for a token limited to centers, one whose cause is at
 * a center it cannot see names no one (DESIGN.md section 2: nothing of another center shows); for
 * a registered practitioner, the next free slots of that practitioner at that center, the same
 * length, from the requested start. Reads only, after the failed transaction rolled back.
 */
export async function explainConflict(
  ctx: Ctx,
  store: AppointmentStore,
  err: SlotConflict,
  c: { span: Span; patientId?: string; self?: string; registered: boolean },
): Promise<SlotConflict> {
  const companyId = ctx.auth.companyId
  const allowed = ctx.auth.allowedCenters
  let hidden = false
  if (allowed) {
    const centers = await store.conflictCenters(companyId, {
      holder: err.holder,
      practitioner: c.span.practitioner,
      patientId: c.patientId,
      starts_at: c.span.starts_at,
      ends_at: c.span.ends_at,
      self: c.self,
    })
    hidden = centers.length === 0 || centers.some((center) => !allowed.includes(center))
  }
  // A hidden conflict offers nothing either: an empty list would tell a registered practitioner
  // from a free-text name.
  if (hidden || !c.registered || err.holder !== 'practitioner')
    return new SlotConflict(err.holder, { hidden })
  const start = Date.parse(c.span.starts_at)
  const alternatives = await store.availability(companyId, {
    center: c.span.center,
    from: c.span.starts_at,
    to: new Date(start + ALTERNATIVES_DAYS * 86_400_000).toISOString(),
    practitioners: [c.span.practitioner],
    duration: Math.ceil((Date.parse(c.span.ends_at) - start) / 60_000),
    limit: ALTERNATIVES,
  })
  return new SlotConflict(err.holder, { hidden, alternatives })
}

/** Runs `work`; a SlotConflict it throws comes back explained (explainConflict) when `about` knows the claim. */
export async function explainingConflicts<T>(
  ctx: Ctx,
  store: AppointmentStore,
  work: () => Promise<T>,
  about: () => { span: Span; patientId?: string; self?: string; registered: boolean } | null,
): Promise<T> {
  try {
    return await work()
  } catch (err) {
    const context = err instanceof SlotConflict ? about() : null
    if (context) throw await explainConflict(ctx, store, err as SlotConflict, context)
    throw err
  }
}
