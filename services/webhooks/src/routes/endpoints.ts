import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PatchHeaders,
  PostHeaders,
  listOf,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { listDeliveries, replay, retryDelivery } from '../domain/deliveries'
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  sendTest,
  updateEndpoint,
  type EndpointDeps,
} from '../domain/endpoints'
import {
  Accepted,
  CreateEndpointBody,
  Delivery,
  DeliveryParams,
  Endpoint,
  EndpointWithSecret,
  ListDeliveriesQuery,
  ListEndpointsQuery,
  READ_ONLY_FIELDS,
  ReplayBody,
  UpdateEndpointBody,
} from '../schemas/endpoint'

const tags = ['webhooks']
const RULES: RequestErrorOptions = { readOnlyFields: READ_ONLY_FIELDS }
const WITH_ETAG = { ...Endpoint, headers: ETagHeader }
const UNSAFE = problem('unsafe_url: not https, or an address that is not public')
const FORBIDDEN = problem('center_forbidden: a token limited to centers names one of its centers')
const ACCEPTED = { ...Accepted, description: 'Queued: the delivery log shows each attempt' }

const routes = {
  create: {
    operationId: 'createWebhookEndpoint',
    summary: 'Register a webhook endpoint',
    description:
      'Events of `event_types` (or `["*"]`) are POSTed to `url`, signed per Standard Webhooks. `secret` is in this answer only: keep it to verify signatures. At most 20 per company (422 endpoint_limit_reached). The center is `codalmacen` of the body, else of the query string, else every center. A token limited to centers must name one of its centers.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateEndpointBody,
    response: {
      201: { ...EndpointWithSecret, headers: { ...ETagHeader, location: Type.String() } },
      403: FORBIDDEN,
      409: problem('idempotency_conflict'),
      422: UNSAFE,
    },
  },
  list: {
    operationId: 'listWebhookEndpoints',
    summary: 'List webhook endpoints',
    description: 'Oldest first. A token limited to centers sees the endpoints of its centers.',
    querystring: ListEndpointsQuery,
    response: { 200: listOf(Endpoint, 'WebhookEndpointList') },
  },
  get: {
    operationId: 'getWebhookEndpoint',
    summary: 'Read one webhook endpoint',
    description: "An endpoint outside `codalmacen` or the token's centers is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: WITH_ETAG },
  },
  update: {
    operationId: 'updateWebhookEndpoint',
    summary: 'Change url, event types, center, description or status',
    description:
      '`status: enabled` after a fix clears `disabled_reason`; deliveries still pending go out again. `If-Match` with a stale version is 412.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdateEndpointBody,
    response: { 200: WITH_ETAG, 403: FORBIDDEN, 412: problem('version_mismatch'), 422: UNSAFE },
  },
  remove: {
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint and its delivery log',
    params: IdParams,
    querystring: CenterQuery,
    response: { 204: Type.Null({ description: 'Deleted' }) },
  },
  rotate: {
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate the signing secret',
    description:
      'Answers the new `secret` (only here). For 24 h deliveries carry two signatures, with the old and the new secret.',
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...EndpointWithSecret, headers: ETagHeader } },
  },
  test: {
    operationId: 'testWebhookEndpoint',
    summary: 'Send a webhook.test event to this endpoint',
    params: IdParams,
    querystring: CenterQuery,
    response: { 202: ACCEPTED },
  },
  deliveries: {
    operationId: 'listWebhookDeliveries',
    summary: "An endpoint's delivery log",
    description: 'Newest first; one row per event, with its attempts so far and the last outcome.',
    params: IdParams,
    querystring: ListDeliveriesQuery,
    response: { 200: listOf(Delivery, 'WebhookDeliveryList') },
  },
  retry: {
    operationId: 'retryWebhookDelivery',
    summary: 'Send a delivery again now',
    description: '`accepted` is 0 when the delivery is in flight or already pending again.',
    params: DeliveryParams,
    querystring: CenterQuery,
    response: { 202: ACCEPTED },
  },
  replay: {
    operationId: 'replayWebhookEvents',
    summary: 'Send again every matching event since an instant',
    description: '`since` at most 7 days ago. Events are sent again with their own `webhook-id`.',
    params: IdParams,
    querystring: CenterQuery,
    body: ReplayBody,
    response: { 202: ACCEPTED },
  },
}
/** The endpoint (or delivery) a request names: its id and `?codalmacen=` (404 outside that center). */
const targetOf = (req: { params: { id: string }; query: { codalmacen?: string } }) => ({
  id: req.params.id,
  queryCenter: req.query.codalmacen,
})
const route = <S extends object>(schema: S) => ({
  config: { rules: RULES },
  schema: { tags, ...schema },
})

/** The webhook endpoint routes (DESIGN.md section 10); each handler calls one use case. */
export const endpointRoutes: FastifyPluginAsyncTypebox<EndpointDeps> = async (app, deps) => {
  const { store } = deps
  app.post('/webhooks/endpoints', route(routes.create), async (req, reply) => {
    const result = await createEndpoint(req.ctx, deps, {
      body: req.body,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 201, location: `/webhooks/endpoints/${result.body.id}` })
  })
  app.get('/webhooks/endpoints', route(routes.list), async (req) => listEndpoints(req.ctx, store, req.query))
  app.get('/webhooks/endpoints/:id', route(routes.get), async (req, reply) =>
    sendResource(reply, { body: await getEndpoint(req.ctx, store, targetOf(req)) }),
  )
  app.patch('/webhooks/endpoints/:id', route(routes.update), async (req, reply) => {
    const body = await updateEndpoint(req.ctx, deps, {
      ...targetOf(req),
      patch: req.body,
      ifMatch: req.headers['if-match'],
    })
    return sendResource(reply, { body })
  })
  app.delete('/webhooks/endpoints/:id', route(routes.remove), async (req, reply) => {
    await deleteEndpoint(req.ctx, store, targetOf(req))
    return reply.code(204).send(null)
  })
  app.post('/webhooks/endpoints/:id/rotate-secret', route(routes.rotate), async (req, reply) =>
    sendResource(reply, { body: await rotateSecret(req.ctx, deps, targetOf(req)) }),
  )
  app.post('/webhooks/endpoints/:id/test', route(routes.test), async (req, reply) =>
    reply.code(202).send(await sendTest(req.ctx, deps, targetOf(req))),
  )
  app.get('/webhooks/endpoints/:id/deliveries', route(routes.deliveries), async (req) =>
    listDeliveries(req.ctx, store, { ...req.query, endpointId: req.params.id }),
  )
  app.post('/webhooks/deliveries/:id/retry', route(routes.retry), async (req, reply) =>
    reply.code(202).send(await retryDelivery(req.ctx, deps, targetOf(req))),
  )
  app.post('/webhooks/endpoints/:id/replay', route(routes.replay), async (req, reply) =>
    reply.code(202).send(await replay(req.ctx, deps, { ...targetOf(req), since: req.body.since })),
  )
}
