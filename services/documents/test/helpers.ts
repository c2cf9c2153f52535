import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { deflateSync } from 'node:zlib'
import {
  Amqp,
  ASSERTION_HEADER,
  assertionHeaders,
  bodyHashOf,
  createDb,
  createLogger,
  migrate,
  uuidv7,
  verifyAssertion,
  type Principal,
} from '@clinic/platform'
import { internalAnswers, testAssertionKeys, testServices, testSigner } from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { buildApp, type App } from '../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'

/**
 * The far ends of documents' lookups: a local HTTP server speaking the patients, appointments and
 * clinical services' internal endpoints (200 or 404 per company, 401 without documents' valid assertion),
 * so the real clients, assertions and timeouts run.
 */
export async function directoryFarEnd(keys = testAssertionKeys(['documents'])) {
  const patients = new Map<string, { requires_legal_guardian: boolean }>()
  /** company:appointment -> its patient; company:exam -> its patient (and center). */
  const appointments = new Map<string, string>()
  const exams = new Map<string, { patient_id: string; codalmacen: string }>()
  /** What documents asked comms to send, by company. */
  const messages: Array<{ companyId: number; body: { patient_id: string; subject?: string; body: string } }> =
    []
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    const path = (req.url ?? '').split('?')[0]!
    const check = await verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, keys, {
      method: req.method!,
      path,
    })
    const send = (status: number, body: object) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (!check.ok || check.claims.bodyHash !== bodyHashOf(raw)) return send(401, { code: 'unauthenticated' })
    const company = check.claims.companyId
    if (req.method === 'POST' && path === '/internal/comms/send') {
      const body = JSON.parse(raw) as { patient_id: string; body: string }
      if (!patients.has(`${company}:${body.patient_id}`))
        return send(422, { code: 'unknown_patient', detail: 'x' })
      messages.push({ companyId: company, body })
      return send(202, { id: uuidv7(), status: 'queued' })
    }
    const patient = /^\/internal\/patients\/([^/]+)$/.exec(path)?.[1]
    const p = patient && patients.get(`${company}:${patient}`)
    if (p)
      return send(
        200,
        internalAnswers.patient({
          id: patient,
          email: 'testa@example.invalid',
          preferred_channel: 'email',
          requires_legal_guardian: p.requires_legal_guardian,
          guardian: p.requires_legal_guardian
            ? { name: 'Tutor Ficticio', relationship: 'padre', email: 'tutor@example.invalid', phone: null }
            : null,
        }),
      )
    const appointment = /^\/internal\/appointments\/([^/]+)$/.exec(path)?.[1]
    const appointmentOf = appointment && appointments.get(`${company}:${appointment}`)
    if (appointmentOf)
      return send(200, internalAnswers.appointment({ id: appointment, patient_id: appointmentOf }))
    const exam = /^\/internal\/clinical\/exams\/([^/]+)$/.exec(path)?.[1]
    const examOf = exam && exams.get(`${company}:${exam}`)
    if (examOf) return send(200, internalAnswers.exam({ id: exam, ...examOf }))
    return send(404, { code: 'not_found' })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    messages,
    /** The consent link in the last message to that patient (its path: /p/c/<token>). */
    linkTo(patientId: string): string {
      const m = messages.filter((x) => x.body.patient_id === patientId).at(-1)
      const url = /https?:\/\/\S+\/p\/c\/\S+/.exec(m?.body.body ?? '')?.[0]
      if (!url) throw new Error(`no consent link was sent to ${patientId}`)
      return url.slice(PUBLIC_BASE_URL.length)
    },
    /** A new patient of that company, known to the far end. */
    patient(companyId: number, o: { requiresGuardian?: boolean } = {}): string {
      const id = uuidv7()
      patients.set(`${companyId}:${id}`, { requires_legal_guardian: o.requiresGuardian ?? false })
      return id
    },
    /** An appointment of that company's patient, known to the far end. */
    appointment(companyId: number, patientId: string): string {
      const id = uuidv7()
      appointments.set(`${companyId}:${id}`, patientId)
      return id
    },
    /** An exam (clinical's) of that company's patient, known to the far end. */
    exam(companyId: number, patientId: string): string {
      const id = uuidv7()
      exams.set(`${companyId}:${id}`, { patient_id: patientId, codalmacen: 'ALM1' })
      return id
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
export type DirectoryFarEnd = Awaited<ReturnType<typeof directoryFarEnd>>

export interface Harness {
  app: App
  knex: Knex
  /** The schema owner, to inspect rows of any company as a test. */
  owner: Knex
  far: DirectoryFarEnd
  close(): Promise<void>
}

export const LINK_SECRET = 'documents-test-link-secret-0123456789abcdef'

export const PUBLIC_BASE_URL = 'http://clinic.test'

export async function startApp(o: { maxBytes?: number; clock?: () => Date } = {}): Promise<Harness> {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const logger = createLogger({ service: 'documents', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 4 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  const far = await directoryFarEnd()
  // Started for readiness only: these tests read the outbox; publishing is the relay's (platform) job.
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'documents-test' })
  await amqp.start()
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys([]),
    serviceSigner: testSigner('documents'),
    services: testServices('documents', far.url),
    maxBytes: o.maxBytes,
    linkSecret: LINK_SECRET,
    publicBaseUrl: PUBLIC_BASE_URL,
    clock: o.clock,
  })
  await app.ready()
  return {
    app,
    knex,
    owner,
    far,
    async close() {
      await app.close()
      await amqp.close()
      await far.close()
      await Promise.all([knex.destroy(), owner.destroy()])
    },
  }
}

/** A multipart/form-data body: fields, then a file part, with a boundary of its own. */
export function multipart(
  fields: Record<string, string>,
  file?: { bytes: Buffer; filename?: string; contentType?: string; name?: string },
  boundary = `----clinic${uuidv7().replace(/-/g, '')}`,
): { body: Buffer; contentType: string } {
  const parts: Buffer[] = []
  for (const [name, value] of Object.entries(fields))
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
    )
  if (file)
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.name ?? 'file'}"; filename="${file.filename ?? 'upload.bin'}"\r\nContent-Type: ${file.contentType ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      file.bytes,
      Buffer.from('\r\n'),
    )
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

/** An upload as the gateway forwards it: streamed, its assertion naming no body hash. */
export async function upload(
  app: App,
  principal: Principal,
  form: { body: Buffer; contentType: string },
  headers: Record<string, string> = {},
  url = '/documents',
) {
  const asserted = await assertionHeaders(
    { auth: principal, requestId: `test-${uuidv7()}` },
    { method: 'POST', path: url, streamed: true },
    testSigner(),
  )
  return app.inject({
    method: 'POST',
    url,
    headers: { ...asserted, 'content-type': form.contentType, ...headers },
    payload: form.body,
  })
}

/** A valid PNG of one pixel, plus `padding` bytes of an ancillary chunk (a bigger file, still a PNG). */
export function png(padding = 0): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])))
    return Buffer.concat([len, Buffer.from(type), data, crc])
  }
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0])
  const idat = deflateSync(Buffer.from([0, 0]))
  const extra = padding
    ? [chunk('tEXt', Buffer.concat([Buffer.from('Comment\0'), Buffer.alloc(padding, 0x61)]))]
    : []
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    ...extra,
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

function crc32(buf: Buffer): number {
  let c = ~0
  for (const b of buf) {
    c ^= b
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1
  }
  return ~c >>> 0
}

/** A minimal PDF (what file-type recognises: the %PDF- header), with `padding` bytes of a comment. */
export const pdf = (padding = 0) =>
  Buffer.concat([
    Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n'),
    Buffer.alloc(padding, 0x20),
    Buffer.from('\n%%EOF\n'),
  ])

/** A DICOM file: 128 bytes of preamble, `DICM`, then some bytes. */
export const dicom = () => Buffer.concat([Buffer.alloc(128), Buffer.from('DICM'), Buffer.alloc(64, 1)])
