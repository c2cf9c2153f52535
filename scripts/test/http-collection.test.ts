// docs/clinic-api.http is generated: the .http collection (VS Code REST Client, JetBrains HTTP Client)
// that scripts/http-collection.mjs makes of docs/openapi.json. The generator is ESM and Jest runs these
// tests as CommonJS, so it runs in a child process (`--stdout`); nothing in the checkout is written.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

const ROOT = path.resolve(__dirname, '../..')
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

type Operation = { operationId?: string; requestBody?: unknown; security?: unknown[] }
type Doc = { security?: unknown[]; paths: Record<string, Record<string, Operation>> }
type Request = {
  title: string
  name?: string
  method: string
  target: string
  headers: Record<string, string>
  body: string
}

/** What the generator prints for an OpenAPI document file (docs/openapi.json when none). */
function generate(docPath?: string): string {
  const args = [path.join(ROOT, 'scripts/http-collection.mjs'), '--stdout', ...(docPath ? [docPath] : [])]
  return execFileSync(process.execPath, args, { encoding: 'utf8' })
}

/** generate() for a document given as an object, through a temporary file. */
function generateFor(doc: object): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'http-collection-'))
  try {
    writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(doc))
    return generate(path.join(dir, 'openapi.json'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The requests of a collection, split as both clients do: a block per `###`; in it comments
 * (`# @name`), the request line, headers up to a blank line, then the body.
 */
function parse(text: string): Request[] {
  return text
    .split(/^###/m)
    .slice(1)
    .map((block) => {
      const lines = block.split('\n')
      const at = lines.findIndex((l, i) => i > 0 && l !== '' && !l.startsWith('#'))
      const end = lines.includes('', at) ? lines.indexOf('', at) : lines.length
      const [method = '', target = ''] = lines[at]!.split(' ')
      const headers = lines.slice(at + 1, end).map((l) => {
        const [, key = '', value = ''] = /^([^:]+): (.*)$/.exec(l) ?? []
        return [key.toLowerCase(), value]
      })
      const body = lines.slice(end + 1).join('\n')
      const name = lines.find((l) => l.startsWith('# @name '))?.slice('# @name '.length)
      return {
        title: lines[0]!.trim(),
        name,
        method,
        target,
        headers: Object.fromEntries(headers),
        body: body.trim(),
      }
    })
}

/** `GET /patients/{}`: a method and a path with its parameters blanked, from the document or the file. */
const operationKey = (method: string, p: string) =>
  `${method.toUpperCase()} ${p.replace(/\{+[^}]+\}+/g, '{}')}`
const requestKey = (r: Request) => operationKey(r.method, r.target.replace(/^\{\{api\}\}/, '').split('?')[0]!)

/** The operations of a document, with what the file says of each. */
function operations(doc: Doc) {
  return Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({
        key: operationKey(method, p),
        op,
        secured: (op.security ?? doc.security ?? []).length > 0,
      })),
  )
}

/** The first line where two texts differ, to point at without printing the whole file. */
function firstDifference(committed: string, generated: string): string {
  const [a, b] = [committed.split('\n'), generated.split('\n')]
  let at = 0
  while (at < Math.max(a.length, b.length) && a[at] === b[at]) at++
  return `line ${at + 1}: committed ${JSON.stringify(a[at])}, generated ${JSON.stringify(b[at])}`
}

describe('docs/clinic-api.http', () => {
  const committed = readFileSync(path.join(ROOT, 'docs/clinic-api.http'), 'utf8')
  const doc = JSON.parse(readFileSync(path.join(ROOT, 'docs/openapi.json'), 'utf8')) as Doc
  const requests = parse(committed)
  const ops = operations(doc)

  it('is what scripts/http-collection.mjs makes of docs/openapi.json', () => {
    const generated = generate()
    if (committed !== generated) {
      throw new Error(
        'docs/clinic-api.http is stale: run `npm run openapi` (or `node scripts/http-collection.mjs`) ' +
          `and commit it. First difference at ${firstDifference(committed, generated)}`,
      )
    }
  })

  it('names every operationId of the document once, as `# @name`', () => {
    const names = requests.map((r) => r.name)
    const ids = ops.map(({ op }) => op.operationId).filter((id) => id !== undefined)
    expect(ids.filter((id) => names.filter((n) => n === id).length !== 1)).toEqual([])
    expect(new Set(names).size).toBe(names.length)
  })

  it('has one request line per path and method of the document, under its operationId', () => {
    expect(requests.every((r) => r.target.startsWith('{{api}}/'))).toBe(true)
    expect(requests.map(requestKey).sort()).toEqual(ops.map((o) => o.key).sort())
    const idOf = new Map(ops.map((o) => [o.key, o.op.operationId]))
    const named = requests.map((r) => [requestKey(r), r.name])
    expect(named).toEqual(requests.map((r) => [requestKey(r), idOf.get(requestKey(r)) ?? r.name]))
  })

  it('sends the token to secured operations only (not to `security: []`: /health, the Twilio callback)', () => {
    const securedOf = new Map(ops.map((o) => [o.key, o.secured]))
    const sent = requests.map((r) => [requestKey(r), 'x-service-token' in r.headers])
    expect(sent).toEqual(requests.map((r) => [requestKey(r), securedOf.get(requestKey(r))]))
    expect(sent.filter(([, token]) => !token).length).toBeGreaterThan(0)
  })

  it('has a body where the operation takes one, and each JSON body parses', () => {
    const bodyOf = new Map(ops.map((o) => [o.key, o.op.requestBody !== undefined]))
    expect(requests.map((r) => [requestKey(r), r.body !== ''])).toEqual(
      requests.map((r) => [requestKey(r), bodyOf.get(requestKey(r))]),
    )
    const json = requests.filter((r) => r.headers['content-type'] === 'application/json')
    expect(json.length).toBeGreaterThan(0)
    for (const r of json) expect(() => JSON.parse(r.body)).not.toThrow()
  })
})

describe('scripts/http-collection.mjs on a reworked-style document (http)', () => {
  // $ref everywhere, path-level parameters, no summary or operationId, `security: []`, named examples.
  const doc = {
    openapi: '3.1.0',
    info: { title: 'Test API', version: '1' },
    servers: [{ url: '/api/3' }],
    security: [{ serviceToken: [] }],
    components: {
      securitySchemes: { serviceToken: { type: 'apiKey', in: 'header', name: 'X-service-Token' } },
      parameters: {
        Id: { name: 'id', in: 'path', required: true, description: 'UUIDv7', schema: { type: 'string' } },
        Center: {
          name: 'codalmacen',
          in: 'query',
          required: true,
          schema: { $ref: '#/components/schemas/Code' },
        },
      },
      schemas: {
        Code: { type: 'string', examples: ['ALM1'] },
        Thing: {
          type: 'object',
          required: ['name', 'when', 'kind', 'count', 'tags', 'center'],
          properties: {
            name: { type: 'string', examples: ['Lucia'] },
            when: { type: ['string', 'null'], format: 'date-time' },
            kind: { anyOf: [{ enum: ['a'] }, { enum: ['b'] }] },
            count: { type: 'integer', minimum: 2 },
            tags: { type: 'array', items: { type: 'string' } },
            center: { $ref: '#/components/schemas/Code' },
            notes: { type: 'string' },
          },
        },
      },
      requestBodies: {
        Thing: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
      },
    },
    paths: {
      '/things/{id}': {
        parameters: [{ $ref: '#/components/parameters/Id' }],
        get: {
          operationId: 'getThing',
          parameters: [{ $ref: '#/components/parameters/Center' }],
          responses: {},
        },
        patch: { requestBody: { $ref: '#/components/requestBodies/Thing' }, responses: {} },
      },
      '/things': {
        post: {
          operationId: 'createThing',
          summary: 'Create a thing\nsecond line',
          parameters: [{ name: 'idempotency-key', in: 'header', schema: { type: 'string' } }],
          requestBody: {
            content: {
              'application/json': { examples: { one: { value: { name: 'first' } }, two: { value: {} } } },
            },
          },
          responses: {},
        },
      },
      '/hooks': {
        post: {
          operationId: 'hook',
          security: [],
          parameters: [{ name: 'x-signature', in: 'header', description: 'HMAC of the form', schema: {} }],
          requestBody: {
            content: { 'application/x-www-form-urlencoded': { example: { a: '1', b: 'x y' } } },
          },
          responses: {},
        },
      },
    },
  }

  it('makes one request per operation, resolving $ref and filling what is missing', () => {
    const text = generateFor(doc)
    expect(text).toBe(generateFor(doc))
    expect(text.split('\n').slice(3, 8)).toEqual([
      '',
      '@api = http://127.0.0.1:8080/api/3',
      '@token = <paste the token from npm run demo>',
      '@thingId = <UUIDv7>',
      '@xSignature = <HMAC of the form>',
    ])
    const requests = parse(text)
    expect(requests).toHaveLength(4)
    const [get, patch, create, hook] = requests as [Request, Request, Request, Request]
    expect(get).toMatchObject({ title: 'getThing', name: 'getThing', method: 'GET' })
    expect(get.target).toBe('{{api}}/things/{{thingId}}?codalmacen=ALM1')
    expect(get.headers).toEqual({ 'x-service-token': '{{token}}' })
    expect(patch).toMatchObject({
      title: 'patchThingsId',
      name: 'patchThingsId',
      target: '{{api}}/things/{{thingId}}',
    })
    expect(patch.headers).toEqual({
      'x-service-token': '{{token}}',
      'content-type': 'application/json',
      'if-match': '"1"',
    })
    expect(JSON.parse(patch.body)).toEqual({
      name: 'Lucia',
      when: '2026-01-01T09:00:00Z',
      kind: 'a',
      count: 2,
      tags: ['string'],
      center: 'ALM1',
    })
    expect(create).toMatchObject({ title: 'Create a thing', body: '{\n  "name": "first"\n}' })
    expect(create.headers['idempotency-key']).toBe('createThing-1')
    expect(hook.headers).toEqual({
      'content-type': 'application/x-www-form-urlencoded',
      'x-signature': '{{xSignature}}',
    })
    expect(hook.body).toBe('a=1&b=x+y')
    expect(text.endsWith('\n') && !text.endsWith('\n\n')).toBe(true)
  })
})
