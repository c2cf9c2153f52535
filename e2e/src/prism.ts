import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import Ajv2020 from 'ajv/dist/2020'

const SPEC = path.resolve(__dirname, '../../docs/openapi.json')
const CLI = require.resolve('@stoplight/prism-cli/dist/index.js')

/** A violation Prism reports in `sl-violations` (request or response side). */
export interface Violation {
  location: string[]
  severity: string
  code?: string | number
  message: string
}

export interface Prism {
  /** Prism's root: a request to `<url>/patients` is checked as `/patients` and sent to `<api>/patients`. */
  url: string
  /** What Prism printed (its log), for failure messages. */
  log: () => string
  stop: () => Promise<void>
}

/**
 * Starts Stoplight Prism, a third-party validating proxy, in front of the gateway's API base with
 * the committed contract (docs/openapi.json). With `errors`, a request that breaks the contract is
 * answered by Prism itself (422, or 401 without credentials) and a response that breaks it is a
 * 500; without, both pass and the violations come back in the `sl-violations` header.
 */
export async function startPrism(api: string, o: { errors: boolean }): Promise<Prism> {
  const args = [CLI, 'proxy', SPEC, api, '--host', '127.0.0.1', '--port', '0', '--cors=false']
  if (o.errors) args.push('--errors')
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  const url = await new Promise<string>((resolve, reject) => {
    // Generous: Prism reads the whole document first, and on a busy 2-core machine that is slow.
    const timer = setTimeout(() => reject(new Error(`Prism did not start in 90 s:\n${log}`)), 90_000)
    const read = (chunk: Buffer) => {
      log += chunk.toString()
      const m = /Prism is listening on (http:\/\/\S+)/.exec(log)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!.replace(/\/$/, ''))
      }
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`Prism exited (${code}) before listening:\n${log}`))
    })
  })
  return {
    url,
    log: () => log,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
      }),
  }
}

/** The violations of an answer that went through Prism: its header, or its own error body. */
export async function violationsOf(res: Response): Promise<Violation[]> {
  const header = res.headers.get('sl-violations')
  const found: Violation[] = header ? (JSON.parse(header) as Violation[]) : []
  if (res.headers.get('content-type')?.startsWith('application/problem+json')) {
    const body = (await res.clone().json()) as { type?: string; validation?: Violation[]; detail?: string }
    if (body.type?.startsWith('https://stoplight.io/prism/errors#'))
      found.push(
        ...(body.validation ?? [
          { location: ['prism'], severity: 'Error', message: `${body.type}: ${body.detail}` },
        ]),
      )
  }
  return found
}

/**
 * Prism cannot relay a 501: its proxy answers any upstream 501 with a problem of its own
 * (UPSTREAM_NOT_IMPLEMENTED, prism-http forwarder). For those answers the document is applied
 * here with Ajv (JSON Schema 2020-12, as OpenAPI 3.1 is): the operation's response for the status
 * (or `default`), its body schema and its required headers.
 */
export function contractErrors(
  doc: OpenApiDoc,
  path: string,
  method: string,
  answer: { status: number; headers: Headers; body: unknown },
): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  // A header is text: "25" is the integer 25 (OpenAPI's simple style), as Prism reads it.
  const coercing = new Ajv2020({ strict: false, coerceTypes: true })
  ajv.addSchema({ ...doc, $id: 'doc' })
  const responses = doc.paths[path]?.[method]?.responses ?? {}
  let response = responses[String(answer.status)] ?? responses.default
  if (!response) return [`${method} ${path}: ${answer.status} is not documented`]
  response = deref(doc, response)
  const errors: string[] = []
  for (const [name, h] of Object.entries(response.headers ?? {})) {
    const header = deref(doc, h)
    const value = answer.headers.get(name)
    if (value === null) {
      if (header.required) errors.push(`header ${name} is missing`)
    } else if (header.schema && !coercing.validate({ properties: { v: header.schema } }, { v: value }))
      errors.push(`header ${name}: ${coercing.errorsText()}`)
  }
  const type = answer.headers.get('content-type')?.split(';')[0] ?? ''
  const media = response.content?.[type]
  if (!media) errors.push(`content type ${type} is not documented for ${answer.status}`)
  else if (!ajv.validate(media.schema.$ref ? { $ref: `doc${media.schema.$ref}` } : media.schema, answer.body))
    errors.push(`body: ${ajv.errorsText()}`)
  return errors
}

type OpenApiDoc = { paths: Record<string, Record<string, { responses?: Record<string, any> }>> } & Record<
  string,
  any
>

/** A `$ref` of the document (`#/components/...`), followed. */
function deref(doc: OpenApiDoc, node: any): any {
  if (!node?.$ref) return node
  return (node.$ref as string)
    .slice(2)
    .split('/')
    .reduce((at: any, key) => at?.[key], doc)
}
