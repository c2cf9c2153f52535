import { ETagHeader, PatchHeaders, listOf, problem, sendResource } from '@clinic/platform'
import { CenterForbidden, VersionMismatch, type FieldError } from '@clinic/platform/core'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { listReminders } from '../reminders/read-reminders'
import type { ReminderStore } from '../reminders/reminder-store'
import { parseOffset } from '../reminders/schedule'
import { ListRemindersQuery, Reminder, ReminderPolicy, ReminderPolicyBody } from '../schemas/reminder'

const tags = ['comms']
const MAX_OFFSET_MS = 30 * 86_400_000

/** What the schema cannot say of a policy: offsets of at most 30 days, quiet hours of some length. */
export function policyFieldErrors(raw: unknown): FieldError[] {
  if (typeof raw !== 'object' || raw === null) return []
  const b = raw as { offsets?: unknown; quiet_hours?: { start?: unknown; end?: unknown } | null }
  const errors: FieldError[] = []
  if (Array.isArray(b.offsets))
    b.offsets.forEach((o, i) => {
      const d = typeof o === 'string' ? parseOffset(o) : null
      if (d && (d.days * 86_400_000 + d.ms === 0 || d.days * 86_400_000 + d.ms > MAX_OFFSET_MS))
        errors.push({ path: `/offsets/${i}`, message: 'must be more than zero and at most 30 days' })
    })
  if (b.quiet_hours && b.quiet_hours.start === b.quiet_hours.end && b.quiet_hours.start !== undefined)
    errors.push({ path: '/quiet_hours/end', message: 'must differ from start' })
  return errors
}

const policyResponse = { ...ReminderPolicy, headers: ETagHeader }

const routes = {
  getPolicy: {
    tags,
    operationId: 'getReminderPolicy',
    summary: "The company's reminder policy",
    description:
      'Off until set. `offsets` are ISO 8601 durations before `starts_at`; `quiet_hours` are local times in each appointment’s time zone.',
    response: { 200: policyResponse },
  },
  putPolicy: {
    tags,
    operationId: 'putReminderPolicy',
    summary: 'Set the reminder policy',
    description:
      'Applies to appointments booked or moved from now on. A reminder due in quiet hours goes out at the last minute before they begin (or is `skipped` if that had passed when it was scheduled). With `confirm_links`, each reminder carries a link to confirm or cancel the appointment. A token limited to centers cannot change it (403 center_forbidden). `If-Match` with a stale version is 412.',
    headers: PatchHeaders,
    body: ReminderPolicyBody,
    response: {
      200: policyResponse,
      403: problem('center_forbidden: the policy is the whole company’s'),
      412: problem('version_mismatch'),
    },
  },
  list: {
    tags,
    operationId: 'listReminders',
    summary: 'List scheduled and past reminders',
    description:
      'Soonest due first; `appointment_id` gives one appointment’s. A token limited to centers sees the reminders of its centers.',
    querystring: ListRemindersQuery,
    response: { 200: listOf(Reminder, 'ReminderList') },
  },
}

export const reminderRoutes: FastifyPluginAsyncTypebox<{ store: ReminderStore }> = async (app, { store }) => {
  app.get('/comms/reminder-policy', { schema: routes.getPolicy }, async (req, reply) =>
    sendResource(reply, { body: await store.policy(req.ctx.auth.companyId) }),
  )

  app.put(
    '/comms/reminder-policy',
    { schema: routes.putPolicy, config: { rules: { extra: policyFieldErrors } } },
    async (req, reply) => {
      if (req.ctx.auth.allowedCenters) throw new CenterForbidden()
      const policy = await store.setPolicy(req.ctx.auth.companyId, req.body, req.headers['if-match'])
      if (!policy) throw new VersionMismatch()
      req.ctx.log.info({ enabled: policy.enabled, offsets: policy.offsets }, 'reminder policy set')
      return sendResource(reply, { body: policy })
    },
  )

  app.get('/comms/reminders', { schema: routes.list }, async (req) =>
    listReminders(req.ctx, store, req.query),
  )
}
