import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { Parameters } from '@medplum/fhirtypes'
import {
  AppError,
  CenterForbidden,
  FHIR_CONTENT_TYPE,
  NotFound,
  ValidationFailed,
  traceOf,
} from '@clinic/platform'
import { BASES } from '../bases'
import { centerRecords } from '../db/fhir-identity'
import type { ExportJob, ExportStore } from '../export/export-store'
import { exportRequest, type ExportLevel, type KickoffParams } from '../export/kickoff'
import { FHIR_BASE, FHIR_TYPES } from '../families'
import { InsufficientScope } from '../plugins/scopes'
import type { Scope } from '../scopes'

export interface ExportRoutesOptions {
  /** The identity schema (the company's centers: a Group). */
  knex: Knex
  store: ExportStore
  publicBaseUrl: string
  /** The clock retention is measured by (GATEWAY_CLOCK_FILE). */
  clock: () => Date
  retentionHours: number
  /** Tells this process's export worker there is work (others find it by polling). */
  wake: () => void
}

/** A second export of a company while one runs (DESIGN.md section 19). */
export class ExportInProgress extends AppError {
  constructor(running: string | null) {
    super({
      status: 429,
      code: 'export_in_progress',
      title: 'An export of this company is running',
      detail: `One export of a company runs at a time${running ? `: ${running}` : ''}; retry when it has completed`,
      headers: { 'retry-after': '30', ...(running ? { 'content-location': running } : {}) },
    })
  }
}

/** An export that ended in error: its status answers this (the IG's error response). */
class ExportFailed extends AppError {
  constructor(reason: string) {
    super({ status: 500, code: 'export_failed', title: 'The export failed', detail: reason })
  }
}

const NDJSON = 'application/fhir+ndjson'
/** Seconds a client waits between status requests while the export runs. */
const RETRY_AFTER_SECONDS = 1

/** A GET's query, or a POST's Parameters resource, as name -> values. */
function kickoffParams(req: FastifyRequest): KickoffParams {
  const params: KickoffParams = new Map()
  const add = (name: string, value: string) => params.set(name, [...(params.get(name) ?? []), value])
  if (req.method === 'GET') {
    for (const [name, value] of Object.entries(req.query as Record<string, string | string[]>))
      for (const v of Array.isArray(value) ? value : [value]) add(name, v)
    return params
  }
  const body = req.body as Parameters | undefined
  if (body === undefined || body === null) return params
  if (body.resourceType !== 'Parameters' || (body.parameter !== undefined && !Array.isArray(body.parameter)))
    throw new ValidationFailed([{ path: '/resourceType', message: 'must be a Parameters resource' }])
  for (const p of body.parameter ?? []) {
    const value = p.valueString ?? p.valueInstant ?? p.valueDateTime ?? p.valueCode
    if (typeof p.name !== 'string' || typeof value !== 'string')
      throw new ValidationFailed([
        {
          path: `/parameter/${p.name ?? ''}`,
          message: 'must have a name and a string, code or instant value',
        },
      ])
    add(p.name, value)
  }
  return params
}

/** Whether this token may see an export: its company's, and every center of the export is one of the token's. */
const visibleTo = (req: FastifyRequest, job: ExportJob) => {
  const mine = req.principal!.allowedCenters
  const theirs = job.principal.allowedCenters
  return !mine || (theirs !== null && theirs.every((c) => mine.includes(c)))
}

/**
 * FHIR Bulk Data export (HL7 Bulk Data Access IG 2.0.0; DESIGN.md section 19): kick-off at the
 * system, Patient and Group (a center) levels, the status (202 with X-Progress while it runs, the
 * manifest when done), DELETE, and the NDJSON files, each streamed chunk by chunk from PostgreSQL
 * (any replica serves them). The export runs as a job (export/export-worker.ts).
 */
export async function fhirExportRoutes(app: FastifyInstance, o: ExportRoutesOptions) {
  if (!app.hasContentTypeParser('application/fhir+json'))
    app.addContentTypeParser(
      'application/fhir+json',
      { parseAs: 'string' },
      app.getDefaultJsonParser('error', 'error'),
    )
  const publicBase = o.publicBaseUrl.replace(/\/$/, '')
  for (const base of BASES) {
    const root = `${base}${FHIR_BASE}`
    const r: Routed = { ...o, absolute: `${publicBase}${root}`, publicBase }
    for (const method of ['GET', 'POST'] as const) {
      app.route({ method, url: `${root}/$export`, schema: { hide: true }, handler: kickoff(r, 'system') })
      app.route({
        method,
        url: `${root}/Patient/$export`,
        schema: { hide: true },
        handler: kickoff(r, 'patient'),
      })
      app.route({
        method,
        url: `${root}/Group/:group/$export`,
        schema: { hide: true },
        handler: kickoff(r, 'group'),
      })
    }
    app.get(`${root}/$export/:id`, { schema: { hide: true } }, (req, reply) => status(r, req, reply))
    app.delete(`${root}/$export/:id`, { schema: { hide: true } }, async (req, reply) => {
      const job = await visible(r, req)
      await o.store.remove(job.idempresa, job.id)
      return reply.code(202).send()
    })
    app.get(`${root}/$export/:id/:file`, { schema: { hide: true } }, async (req, reply) => {
      const job = await visible(r, req)
      const { file } = req.params as { file: string }
      const seq = /^[1-9]\d{0,8}\.ndjson$/.test(file) ? Number(file.slice(0, -'.ndjson'.length)) : null
      const found =
        job.status === 'completed' && seq !== null
          ? (await o.store.files(job.id)).find((f) => f.seq === seq)
          : undefined
      if (!found) throw new NotFound(`No file ${file} of export ${job.id}`)
      // Another token of the company downloads only what it may read (a deleted file: documents').
      const scope = FHIR_TYPES.get(found.kind === 'deleted' ? 'DocumentReference' : found.type)?.scope
      if (scope && scope !== 'any' && !(req.scopes ?? []).includes(scope))
        throw new InsufficientScope(scope as Scope)
      return reply.type(NDJSON).send(Readable.from(o.store.chunks(job.id, found.seq)))
    })
  }
}

/** The options and the absolute FHIR base of one API base. */
type Routed = ExportRoutesOptions & { absolute: string; publicBase: string }

const statusUrl = (r: Routed, id: string) => `${r.absolute}/$export/${id}`
const expiresAt = (r: Routed, job: ExportJob) =>
  job.completed_at && new Date(job.completed_at.getTime() + r.retentionHours * 3_600_000)

/** The export `id` of the token's company that this token may see and that is not past retention, or 404. */
async function visible(r: Routed, req: FastifyRequest) {
  const { id } = req.params as { id: string }
  const job = /^[0-9a-f-]{36}$/i.test(id) ? await r.store.find(req.principal!.companyId, id) : null
  const expires = job && expiresAt(r, job)
  if (!job || !visibleTo(req, job) || (expires && expires <= r.clock())) throw new NotFound(`No export ${id}`)
  return job
}

/** A kick-off at a level: checked, its job made (the company's only running one), 202 with the status URL. */
const kickoff = (r: Routed, level: ExportLevel) => async (req: FastifyRequest, reply: FastifyReply) => {
  const auth = req.principal!
  if (!/(^|[\s,;])respond-async([\s,;]|$)/i.test(String(req.headers.prefer ?? '')))
    throw new ValidationFailed([
      { path: '/Prefer', message: 'must be respond-async: an export is asynchronous' },
    ])
  const asked = exportRequest(level, kickoffParams(req), req.scopes ?? [])
  let principal = { ...auth, names: undefined }
  let groupId: string | null = null
  if (level === 'group') {
    groupId = (req.params as { group: string }).group
    const centers = await centerRecords(r.knex, auth.companyId)
    if (!centers.some((c) => c.code === groupId)) throw new NotFound(`No Group ${groupId}`)
    if (auth.allowedCenters && !auth.allowedCenters.includes(groupId)) throw new CenterForbidden()
    // A Group is a center's patients: the export sees that center only, in every service.
    principal = { ...principal, allowedCenters: [groupId] }
  }
  const id = randomUUID()
  const made = await r.store.create({
    id,
    companyId: auth.companyId,
    level,
    groupId,
    since: asked.since,
    types: asked.types,
    request: `${r.publicBase}${req.url}`,
    base: r.absolute,
    principal,
    requestId: String(req.id),
    traceparent: traceOf(req.span).traceparent,
  })
  if (!made.created) throw new ExportInProgress(made.running && statusUrl(r, made.running))
  r.wake()
  return reply
    .code(202)
    .header('content-location', statusUrl(r, id))
    .type(FHIR_CONTENT_TYPE)
    .send({
      resourceType: 'OperationOutcome',
      issue: [
        {
          severity: 'information',
          code: 'informational',
          diagnostics: `Export of ${asked.types.join(', ') || 'no type'} accepted; its status: ${statusUrl(r, id)}`,
        },
      ],
    })
}

/** 202 with X-Progress and Retry-After while it runs; the manifest once completed; the failure's OperationOutcome. */
async function status(r: Routed, req: FastifyRequest, reply: FastifyReply) {
  const job = await visible(r, req)
  if (job.status === 'failed') throw new ExportFailed(job.error ?? 'unknown')
  if (job.status === 'in-progress') {
    const p = job.position
    const progress = !p.settled
      ? 'waiting for transactions begun before transactionTime to end'
      : `${job.exported} resources; ${job.types[p.type] ?? 'finishing'} (type ${Math.min(p.type + 1, job.types.length)} of ${job.types.length})`
    return reply
      .code(202)
      .header('x-progress', progress)
      .header('retry-after', String(RETRY_AFTER_SECONDS))
      .send()
  }
  const files = await r.store.files(job.id)
  const item = (f: { seq: number; type: string; count: number }) => ({
    type: f.type,
    url: `${job.base}/$export/${job.id}/${f.seq}.ndjson`,
    count: f.count,
  })
  return reply
    .header('expires', expiresAt(r, job)!.toUTCString())
    .type('application/json; charset=utf-8')
    .send({
      transactionTime: job.transaction_time.toISOString(),
      request: job.request,
      requiresAccessToken: true,
      output: files.filter((f) => f.kind === 'output').map(item),
      deleted: files.filter((f) => f.kind === 'deleted').map(item),
      error: files.filter((f) => f.kind === 'error').map(item),
    })
}
