import { CenterQuery, problem } from '@clinic/platform'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PreferenceStore } from '../domain/preference-store'
import { getPreferences, putPreferenceErrors, setPreference } from '../domain/set-preference'
import { Preference, PreferenceList, PreferenceQuery, PutPreferenceBody } from '../schemas/preference'

const tags = ['comms']

const getPreferencesRoute = {
  schema: {
    tags,
    operationId: 'getPreferences',
    summary: 'Consent of an address (opted out or not), per channel',
    description:
      "Consent is kept per company, channel and address (a guardian's phone serving several children is one preference). A list like every other (`{data, meta}`, paged the same way): with `channel`, the preference on that channel; without, the preference on the channel the address is on by its form (an email address: email; an E.164 number: sms), so one preference today. An address nobody set answers `opted_out: false, source: null, updated_at: null`. Addresses are compared normalised (emails lower-cased, numbers E.164). Every company sees only its own; a token limited to centers (or a read naming `codalmacen`) sees only addresses the company has messaged for patients of those centers: for any other the list is empty.",
    querystring: PreferenceQuery,
    response: {
      200: PreferenceList,
      400: problem('validation_failed (address not an email address or E.164 number, or not of `channel`)'),
    },
  },
}

const putPreferenceRoute = {
  config: { rules: { extra: putPreferenceErrors } },
  schema: {
    tags,
    operationId: 'putPreference',
    summary: 'Opt an address out of a channel, or back in',
    description:
      "Sets the company's preference for the channel and address (source `api`) and answers it. A change is on the audit trail as comms.preference.updated (no address in it: `resource_id` is the preference's `id`). Setting the value it already has writes nothing and answers the preference as it is: `source` and `updated_at` stay those of the last change. A preference the person set themselves (source `sms_keyword` or `email_unsubscribe`) is changed only with `override: true`, which the event carries (`override: true`, among its `changes`); without it `409 preference_set_by_person`. A token limited to centers (or a call naming `codalmacen`) sets only addresses the company has messaged for patients of those centers: another is `404 not_found`. Messages to an opted-out address are `suppressed`, never sent.",
    querystring: CenterQuery,
    body: PutPreferenceBody,
    response: {
      200: Preference,
      400: problem('validation_failed (sms needs an E.164 number, email an email address)'),
      404: problem(
        'not_found (a token limited to centers: no patient of its centers was messaged at the address)',
      ),
      409: problem('preference_set_by_person (the person set it; send override: true to change it)'),
    },
  },
}

/** The routes state their schemas and rules (above); each handler calls one use case. */
export const preferenceRoutes: FastifyPluginAsyncTypebox<{ store: PreferenceStore }> = async (app, deps) => {
  app.get('/comms/preferences', getPreferencesRoute, async (req) =>
    getPreferences(req.ctx, deps.store, req.query),
  )

  app.put('/comms/preferences', putPreferenceRoute, async (req) =>
    setPreference(req.ctx, deps.store, { body: req.body, codalmacen: req.query.codalmacen }),
  )
}
