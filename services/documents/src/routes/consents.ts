import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PostHeaders,
  listOf,
  problem,
  requestHash,
  sendResource,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ConsentDeps } from '../domain/consent-rules'
import type { LinkSender } from '../domain/consent-links'
import { createTemplate } from '../domain/create-template'
import { getConsent } from '../domain/get-consent'
import { getTemplate } from '../domain/get-template'
import { grantInPerson } from '../domain/grant-in-person'
import { listConsents } from '../domain/list-consents'
import { listTemplates } from '../domain/list-templates'
import { requestConsent } from '../domain/request-consent'
import { withdrawConsent } from '../domain/withdraw-consent'
import {
  Consent,
  ConsentTemplate,
  CreateConsentBody,
  CreateTemplateBody,
  GrantBody,
  ListConsentsQuery,
  ListTemplatesQuery,
  WithdrawBody,
} from '../schemas/consent'

const tags = ['consents']

export interface ConsentRoutesOptions extends ConsentDeps {
  /** Sends the signer the consent link (when `send`); null: links are not sent from here. */
  links: LinkSender
}

/** The routes state their schemas; each handler calls one use case. */
const listConsentTemplatesRoute = {
  schema: {
    tags,
    operationId: 'listConsentTemplates',
    summary: 'List consent templates (every version)',
    description: 'Newest first; filter by `key` and `language`.',
    querystring: ListTemplatesQuery,
    response: { 200: listOf(ConsentTemplate, 'ConsentTemplateList') },
  },
}

const createConsentTemplateRoute = {
  schema: {
    tags,
    operationId: 'createConsentTemplate',
    querystring: CenterQuery,
    summary: 'Write a consent template (a new version of its key and language)',
    description:
      'A POST with an existing key and language makes the next version; old versions stay readable. `text_sha256` is the SHA-256 of the body, which consents freeze.',
    headers: PostHeaders,
    body: CreateTemplateBody,
    response: { 201: { ...ConsentTemplate, headers: { location: Type.String() } } },
  },
}

const getConsentTemplateRoute = {
  schema: {
    tags,
    operationId: 'getConsentTemplate',
    querystring: CenterQuery,
    summary: 'Read one version of a consent template',
    params: IdParams,
    response: { 200: ConsentTemplate },
  },
}

const listConsentsRoute = {
  schema: {
    tags,
    operationId: 'listConsents',
    summary: 'List consents',
    description: 'Newest first. A token limited to centers sees only its centers.',
    querystring: ListConsentsQuery,
    response: { 200: listOf(Consent, 'ConsentList') },
  },
}

const requestConsentRoute = {
  schema: {
    tags,
    operationId: 'requestConsent',
    summary: 'Ask for a consent',
    description:
      "Freezes the template's latest version in the language (default the patient's) and its text hash. The signer is the guardian when the patient requires one. With `send` (default true) the signer gets the link `PUBLIC_BASE_URL/p/c/<token>`. `expires_at` (default 7 days) at most 90 days from now, else 400. `appointment_id` and `exam_id` must be this patient's in the company. 422 unknown_template, unknown_patient, unknown_appointment, unknown_exam.",
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateConsentBody,
    response: {
      201: { ...Consent, headers: { ...ETagHeader, location: Type.String() } },
      422: problem('unknown_template, unknown_patient, unknown_appointment or unknown_exam'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}

const getConsentRoute = {
  schema: {
    tags,
    operationId: 'getConsent',
    summary: 'Read one consent',
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...Consent, headers: ETagHeader } },
  },
}

const grantConsentInPersonRoute = {
  schema: {
    tags,
    operationId: 'grantConsentInPerson',
    summary: 'Record a consent granted in the clinic',
    description:
      "`method: in_person`, with a witness. `document_id`: a scanned form already uploaded (category `consent`, same patient); without it the signed text and evidence are rendered as a PDF and stored as a `consent` document. `signer_role` must be the consent's (422 signer_mismatch: a minor's consent is signed by the guardian). A consent that is not pending is 409 invalid_transition.",
    params: IdParams,
    querystring: CenterQuery,
    headers: PostHeaders,
    body: GrantBody,
    response: {
      200: { ...Consent, headers: ETagHeader },
      409: problem('invalid_transition'),
      422: problem('signer_mismatch'),
    },
  },
}

const withdrawConsentRoute = {
  schema: {
    tags,
    operationId: 'withdrawConsent',
    summary: 'Withdraw a granted consent',
    description: 'Only a granted consent (else 409 invalid_transition); nothing is deleted.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PostHeaders,
    body: WithdrawBody,
    response: { 200: { ...Consent, headers: ETagHeader }, 409: problem('invalid_transition') },
  },
}

export const consentRoutes: FastifyPluginAsyncTypebox<ConsentRoutesOptions> = async (app, o) => {
  app.get('/consents/templates', listConsentTemplatesRoute, async (req) =>
    listTemplates(req.ctx, o.store, req.query),
  )

  app.post('/consents/templates', createConsentTemplateRoute, async (req, reply) => {
    const template = await createTemplate(req.ctx, o.store, {
      body: req.body,
      queryCenter: req.query.codalmacen,
    })
    return reply.code(201).header('location', `/consents/templates/${template.id}`).send(template)
  })

  app.get('/consents/templates/:id', getConsentTemplateRoute, async (req) =>
    getTemplate(req.ctx, o.store, { id: req.params.id, queryCenter: req.query.codalmacen }),
  )

  app.get('/consents', listConsentsRoute, async (req) => listConsents(req.ctx, o.store, req.query))

  app.post('/consents', requestConsentRoute, async (req, reply) => {
    const result = await requestConsent(req.ctx, o, {
      body: req.body,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    if (!result.replayed && result.patient && result.linkId && req.body.send !== false)
      await o.links.send(req.ctx, {
        consent: result.body,
        linkId: result.linkId,
        patient: result.patient,
        channel: req.body.channel,
        clinic: result.clinic,
      })
    return sendResource(reply, result, { status: 201, location: `/consents/${result.body.id}` })
  })

  app.get('/consents/:id', getConsentRoute, async (req, reply) =>
    sendResource(reply, {
      body: await getConsent(req.ctx, o.store, { id: req.params.id, queryCenter: req.query.codalmacen }),
    }),
  )

  app.post('/consents/:id/grant', grantConsentInPersonRoute, async (req, reply) =>
    sendResource(reply, {
      body: await grantInPerson(req.ctx, o, {
        id: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        ip: req.headers['x-forwarded-for']?.toString().split(',')[0]?.trim() ?? req.ip,
        userAgent: req.headers['user-agent'] ?? null,
      }),
    }),
  )

  app.post('/consents/:id/withdraw', withdrawConsentRoute, async (req, reply) =>
    sendResource(reply, {
      body: await withdrawConsent(req.ctx, o.store, {
        id: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        now: o.clock(),
      }),
    }),
  )
}
