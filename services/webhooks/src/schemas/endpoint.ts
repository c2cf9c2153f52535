import { Type, type Static } from '@sinclair/typebox'
import { Instant, ListQuery, SINGLE_LINE, Uuid, centerCode, nullable } from '@clinic/platform/http'
import { CATALOGUE_TYPES } from '../domain/catalogue'

/**
 * The webhook contract (DESIGN.md section 10): endpoints, their delivery log, replay and the change
 * feed. These schemas validate requests and produce the OpenAPI document.
 */

export const MAX_ENDPOINTS = 20
export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export const READ_ONLY_FIELDS = [
  'id',
  'status_reason',
  'disabled_reason',
  'secret',
  'created_at',
  'updated_at',
  'version',
  'idempresa',
]

const EventTypeName = Type.Union([...CATALOGUE_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')], {
  description: 'an event type of the catalogue, or `*` for all of them',
})
const EventTypes = Type.Array(EventTypeName, {
  minItems: 1,
  maxItems: CATALOGUE_TYPES.length + 1,
  uniqueItems: true,
  examples: [['appointment.created', 'appointment.updated']],
})
const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  format: 'uri',
  description:
    'https URL the events are POSTed to; it must resolve to public addresses only (else 422 unsafe_url)',
  examples: ['https://hooks.example.com/clinic'],
})
const Description = Type.String({ minLength: 1, maxLength: 500, pattern: SINGLE_LINE })
const EndpointCenter = centerCode(
  'only events of this center (a token limited to centers must name one of its own)',
)
const Secret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
  description:
    '`whsec_` + base64 of 32 random bytes: shown in this answer only. Verify with any Standard Webhooks library.',
})

export const Endpoint = Type.Object(
  {
    id: Uuid,
    url: Type.String(),
    event_types: Type.Array(Type.String()),
    codalmacen: nullable(Type.String()),
    description: nullable(Type.String()),
    status: Type.Union(ENDPOINT_STATUSES.map((s) => Type.Literal(s))),
    disabled_reason: nullable(
      Type.String({ description: 'why it was disabled (410 Gone, 24 h of failures, by hand)' }),
    ),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer(),
  },
  { title: 'WebhookEndpoint', additionalProperties: false },
)
export type Endpoint = Static<typeof Endpoint>

export const EndpointWithSecret = Type.Object(
  { ...Endpoint.properties, secret: Secret },
  { title: 'WebhookEndpointWithSecret', additionalProperties: false },
)
export type EndpointWithSecret = Static<typeof EndpointWithSecret>

export const CreateEndpointBody = Type.Object(
  {
    url: Url,
    event_types: EventTypes,
    codalmacen: Type.Optional(nullable(EndpointCenter)),
    description: Type.Optional(nullable(Description)),
  },
  {
    title: 'WebhookEndpointCreate',
    additionalProperties: false,
    examples: [{ url: 'https://hooks.example.com/clinic', event_types: ['appointment.created'] }],
  },
)
export type CreateEndpointInput = Static<typeof CreateEndpointBody>

export const UpdateEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    event_types: Type.Optional(EventTypes),
    codalmacen: Type.Optional(nullable(EndpointCenter)),
    description: Type.Optional(nullable(Description)),
    status: Type.Optional(
      Type.Union(
        ENDPOINT_STATUSES.map((s) => Type.Literal(s)),
        { description: '`enabled` again after a fix (clears `disabled_reason`), or `disabled` by hand' },
      ),
    ),
  },
  { title: 'WebhookEndpointUpdate', additionalProperties: false, minProperties: 1 },
)
export type UpdateEndpointInput = Static<typeof UpdateEndpointBody>

export const ListEndpointsQuery = Type.Object(
  {
    ...ListQuery,
    status: Type.Optional(Type.Union(ENDPOINT_STATUSES.map((s) => Type.Literal(s)))),
  },
  { additionalProperties: false },
)
export type ListEndpointsInput = Static<typeof ListEndpointsQuery>

export const Delivery = Type.Object(
  {
    id: Uuid,
    endpoint_id: Uuid,
    event_id: Uuid,
    event_type: Type.String(),
    status: Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s))),
    attempts: Type.Integer({ description: 'attempts made so far' }),
    next_attempt_at: nullable(Instant),
    last_status_code: nullable(Type.Integer({ description: "the receiver's last HTTP status" })),
    last_error: nullable(Type.String({ description: 'why the last attempt failed (never the answer body)' })),
    last_duration_ms: nullable(Type.Integer()),
    created_at: Instant,
    succeeded_at: nullable(Instant),
  },
  { title: 'WebhookDelivery', additionalProperties: false },
)
export type Delivery = Static<typeof Delivery>

export const ListDeliveriesQuery = Type.Object(
  {
    ...ListQuery,
    status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
    event_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z_.]+$' })),
  },
  { additionalProperties: false },
)
export type ListDeliveriesInput = Static<typeof ListDeliveriesQuery>

export const ReplayBody = Type.Object(
  { since: Type.String({ format: 'date-time', description: 'RFC 3339; at most 7 days ago' }) },
  { title: 'WebhookReplay', additionalProperties: false },
)
export const Accepted = Type.Object(
  {
    accepted: Type.Integer({ description: 'deliveries queued' }),
  },
  { title: 'WebhookAccepted' },
)

export const ThinDataSchema = Type.Object(
  {
    id: Type.String(),
    resource_type: Type.String({ examples: ['appointment'] }),
    codalmacen: nullable(Type.String()),
    version: nullable(Type.Integer({ description: 'drop a payload older than what you have' })),
    changes: Type.Array(Type.String(), { description: 'names of changed fields, never their values' }),
    status: Type.Optional(Type.String()),
    url: Type.String({
      description: 'the API path of the resource',
      examples: ['/api/appointments/0190...'],
    }),
  },
  { title: 'WebhookEventData' },
)
export const FeedEvent = Type.Object(
  {
    id: Uuid,
    type: Type.String({ examples: ['appointment.created'] }),
    timestamp: Instant,
    data: ThinDataSchema,
  },
  { title: 'FeedEvent' },
)
export const FeedPage = Type.Object(
  {
    data: Type.Array(FeedEvent),
    meta: Type.Object({
      next: Type.String({ description: 'pass as `after` for what comes next (also on an empty page)' }),
    }),
  },
  { title: 'FeedPage' },
)
export const MAX_WAIT_SECONDS = 30
export const FeedQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'a `meta.next`' })),
    types: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        pattern: '^[a-z_.]+(,[a-z_.]+)*$',
        description: 'comma-separated event types',
      }),
    ),
    codalmacen: Type.Optional(centerCode()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WAIT_SECONDS,
        default: 0,
        description: 'seconds to wait for an event when there is none yet (long poll)',
      }),
    ),
  },
  { additionalProperties: false },
)
export type FeedInput = Static<typeof FeedQuery>
export const DeliveryParams = Type.Object({ id: Uuid }, { additionalProperties: false })
