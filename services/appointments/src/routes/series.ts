import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PatchHeaders,
  PostHeaders,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PatientDirectory } from '../domain/directories'
import { cancelSeries } from '../domain/series-cancel'
import { scopeErrors, updateSeries } from '../domain/series-change'
import { createSeries, seriesBodyErrors } from '../domain/series-create'
import { getSeries } from '../domain/series-read'
import type { SeriesStore } from '../domain/series-store'
import { READ_ONLY_FIELDS } from '../schemas/appointment'
import {
  CancelSeriesBody,
  CreateSeriesBody,
  SERIES_TEXT_MESSAGES,
  Series,
  SeriesConflictProblem,
  UpdateSeriesBody,
} from '../schemas/series'

const tags = ['appointments']
const rules = (extra: RequestErrorOptions['extra']): RequestErrorOptions => ({
  extra,
  patternMessages: SERIES_TEXT_MESSAGES,
  readOnlyFields: READ_ONLY_FIELDS,
})
const QUERY_RULES: RequestErrorOptions = { patternMessages: SERIES_TEXT_MESSAGES }
const SeriesAnswer = { ...Series, headers: ETagHeader }

const createSeriesRoute = {
  config: { rules: rules(seriesBodyErrors) },
  schema: {
    tags,
    operationId: 'createSeries',
    summary: 'Book a recurring series',
    description:
      "Each occurrence of `rrule` from `start` (local wall time in the series' zone: a registered practitioner's, else `time_zone`, else Europe/Madrid; the wall time holds across daylight-saving changes) is booked as an ordinary appointment (`series_id`, `occurrence`, `recurrence_id`). At most 104 occurrences within 2 years. All or nothing: any occurrence taken or outside a registered practitioner's hours is 409 series_conflict listing every one with `alternatives`; with `allow_partial: true` the free ones are booked and the others listed in `skipped`. `patient_id` must be a patient of the company (422 unknown_patient). Send `Idempotency-Key` to make retries safe.",
    headers: PostHeaders,
    body: CreateSeriesBody,
    response: {
      201: { ...Series, headers: { ...ETagHeader, location: Type.String() } },
      409: SeriesConflictProblem,
      422: problem('unknown_patient'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}
const getSeriesRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'getSeries',
    summary: 'Read a recurring series with its occurrences',
    description:
      "Its occurrences are appointments (any status), by occurrence; `skipped` lists those never booked. `ETag` is the version. A series outside `codalmacen` or the token's centers is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: SeriesAnswer },
  },
}
const updateSeriesRoute = {
  config: { rules: rules((body) => scopeErrors(body, { change: true })) },
  schema: {
    tags,
    operationId: 'updateSeries',
    summary: 'Change one, the following or all occurrences of a series',
    description:
      "`this` changes `occurrence` alone (it then stays as changed); `following` ends the series before `occurrence` and starts a new one (`previous_series_id`) with it and the rest, changed: the answer is the new series; `all` re-plans every occurrence yet to start that follows the plan. Only scheduled or confirmed occurrences change. `start_time` is local HH:MM in the series' zone. A move onto taken time or outside a registered practitioner's hours is 409 series_conflict (each one listed) and nothing changes. `If-Match` with a stale version is 412.",
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdateSeriesBody,
    response: {
      200: SeriesAnswer,
      409: SeriesConflictProblem,
      412: problem('version_mismatch'),
    },
  },
}
const cancelSeriesRoute = {
  config: { rules: rules((body) => scopeErrors(body, { change: false })) },
  schema: {
    tags,
    operationId: 'cancelSeries',
    summary: 'Cancel one, the following or all occurrences of a series',
    description:
      '`this` cancels `occurrence` (scheduled or confirmed, else 409 invalid_transition); `following` every occurrence yet to start from `occurrence` on (the series ends); `all` every one yet to start (the series is cancelled). `reason` becomes their `cancellation_reason`. Send `Idempotency-Key` to make retries safe.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CancelSeriesBody,
    response: {
      200: SeriesAnswer,
      409: problem('invalid_transition or idempotency_conflict'),
    },
  },
}

export interface SeriesRoutesOptions {
  store: SeriesStore
  patients: PatientDirectory
  clock: () => Date
}

/** /appointments/series (DESIGN.md section 20): each handler calls one use case. */
export const seriesRoutes: FastifyPluginAsyncTypebox<SeriesRoutesOptions> = async (
  app,
  { store, patients, clock },
) => {
  app.post('/appointments/series', createSeriesRoute, async (req, reply) => {
    const result = await createSeries(
      req.ctx,
      { store, patients, clock },
      {
        body: req.body,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      },
    )
    return sendResource(reply, result, { status: 201, location: `/appointments/series/${result.body.id}` })
  })

  app.get('/appointments/series/:id', getSeriesRoute, async (req, reply) => {
    const series = await getSeries(
      req.ctx,
      { store, clock },
      { id: req.params.id, queryCenter: req.query.codalmacen },
    )
    return sendResource(reply, { body: series })
  })

  app.patch('/appointments/series/:id', updateSeriesRoute, async (req, reply) => {
    const series = await updateSeries(
      req.ctx,
      { store, clock },
      {
        id: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        ifMatch: req.headers['if-match'],
      },
    )
    return sendResource(reply, { body: series })
  })

  app.post('/appointments/series/:id/cancel', cancelSeriesRoute, async (req, reply) => {
    const result = await cancelSeries(
      req.ctx,
      { store, clock },
      {
        id: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      },
    )
    return sendResource(reply, result)
  })
}
