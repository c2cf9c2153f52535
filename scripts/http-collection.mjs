// Writes docs/clinic-api.http from docs/openapi.json: one request per operation, in what both VS Code
// REST Client and the JetBrains HTTP Client read (`@name = value` variables, `###`, `# @name`).
// `node scripts/http-collection.mjs [--stdout [doc.json]]` rewrites it, or prints it (for the test).
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const httpPath = fileURLToPath(new URL('../docs/clinic-api.http', import.meta.url))
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
// Where `npm start` serves the gateway: a relative server URL of the document is taken from there.
const GATEWAY = 'http://127.0.0.1:8080/'
// A value for a format when the schema gives no example: enough to pass validation.
const FORMATS = { date: '2026-01-01', 'date-time': '2026-01-01T09:00:00Z', email: 'someone@example.test' }
const firstLine = (text) => `${text ?? ''}`.split('\n')[0].trim()
// x-twilio-signature -> xTwilioSignature (a variable or request name for both clients), X-Twilio-Signature.
const camel = (name) => name.replace(/[^A-Za-z0-9]+(.)?/g, (_, c = '') => c.toUpperCase())
const headerName = (name) => name.replace(/(^|-)(\w)/g, (_, dash, c) => dash + c.toUpperCase())
// A schema's example: JSON Schema's `examples` (OpenAPI 3.1), else OpenAPI 3.0's `example`.
const schemaExample = (schema) => (Array.isArray(schema.examples) ? schema.examples[0] : schema.example)

/** What a local `$ref` (a JSON pointer, `#/components/...`) points at, through chains (not loops); else {}. */
function resolve(doc, node) {
  for (let hops = 0; node?.$ref && hops < 32; hops++) {
    const keys = node.$ref.slice(2).split('/')
    node = keys.reduce((at, key) => at?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
  }
  return node ?? {}
}
// The example a parameter or a media type gives: its own, else the first of its named ones.
const ownExample = (doc, node) => node.example ?? resolve(doc, Object.values(node.examples ?? {})[0]).value

/** A schema's example, else one built from its required properties (a recursive one stops at depth 8). */
function sample(doc, schema, depth = 0) {
  const s = resolve(doc, schema)
  const known = schemaExample(s) ?? s.const ?? s.default ?? s.enum?.[0]
  if (known !== undefined || depth > 8) return known ?? null
  if (s.oneOf || s.anyOf) return sample(doc, (s.oneOf ?? s.anyOf)[0], depth + 1)
  if (s.allOf) {
    const parts = s.allOf.map((part) => sample(doc, part, depth + 1))
    return typeof parts[0] === 'object' ? Object.assign({}, ...parts) : parts[0]
  }
  const type = [].concat(s.type ?? (s.properties ? 'object' : 'string')).find((t) => t !== 'null')
  const property = (key) => [key, sample(doc, s.properties?.[key], depth + 1)]
  if (type === 'object') return Object.fromEntries((s.required ?? []).map(property))
  if (type === 'array') return [sample(doc, s.items, depth + 1)]
  const number = s.minimum ?? 1
  return { integer: number, number, boolean: true, string: FORMATS[s.format] ?? 'string' }[type] ?? null
}
// A parameter's example: its own, else its schema's; undefined when none.
const exampleOf = (doc, param) => ownExample(doc, param) ?? schemaExample(resolve(doc, param.schema))
/** A variable declared once at the top (the first use gives its value), referenced as {{name}}. */
function variable(vars, name, value) {
  if (!vars.has(camel(name))) vars.set(camel(name), firstLine(value))
  return `{{${camel(name)}}}`
}
const placeholder = (param) => `<${firstLine(param.description) || param.name}>`
/** The path, each parameter a variable: `{id}` of /patients/{id} is {{patientId}}, one per resource. */
function pathOf(doc, path, params, vars) {
  return path.replace(/\{([^}]+)\}/g, (_, name, offset) => {
    const param = params.find((p) => p.in === 'path' && p.name === name) ?? { name }
    const resource = path.slice(0, offset).match(/([^/{}]+)\/$/)?.[1]
    const key = name === 'id' && resource ? `${resource.replace(/ies$/, 'y').replace(/s$/, '')}-id` : name
    return variable(vars, key, exampleOf(doc, param) ?? placeholder(param))
  })
}
/** The query string: required parameters, and optional ones with an example; the others are named. */
function queryOf(doc, params, vars) {
  const [shown, others] = [[], []]
  const encode = (v) => encodeURIComponent(`${v}`).replace(/%3A/gi, ':')
  for (const p of params.filter((q) => q.in === 'query')) {
    const schema = resolve(doc, p.schema)
    // A list's page size (`limit`) is shown at its default, where it is easy to change.
    const fallback = p.required || p.name === 'limit' ? (schema.default ?? schema.enum?.[0]) : undefined
    const value = exampleOf(doc, p) ?? fallback
    if (value !== undefined) shown.push(...[].concat(value).map((v) => `${p.name}=${encode(v)}`))
    else if (p.required) shown.push(`${p.name}=${variable(vars, p.name, placeholder(p))}`)
    else others.push(p.name)
  }
  return { query: shown.length ? `?${shown.join('&')}` : '', others }
}
/** The header the operation's security asks for; none for `security: []`. */
function authOf(doc, op) {
  for (const name of (op.security ?? doc.security ?? []).flatMap(Object.keys)) {
    const scheme = resolve(doc, doc.components?.securitySchemes?.[name])
    if (scheme.type === 'apiKey' && scheme.in === 'header') return `${scheme.name}: {{token}}`
  }
}
/** The body: the media type's example, else one built from its schema. */
function bodyOf(doc, op) {
  const content = resolve(doc, op.requestBody).content ?? {}
  const type = Object.keys(content).find((t) => /json/.test(t)) ?? Object.keys(content)[0]
  if (!type) return undefined
  const media = resolve(doc, content[type])
  const value = ownExample(doc, media) ?? sample(doc, media.schema)
  if (type === 'application/x-www-form-urlencoded') return { type, text: `${new URLSearchParams(value)}` }
  return { type, text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }
}

/** One request: `### summary`, `# @name operationId`, the request line, its headers and body. */
function request(doc, path, item, method, vars) {
  const op = item[method]
  // Path-level parameters, overridden by the operation's own (same `in` and name).
  const all = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p))
  const byKey = new Map(all.map((p) => [`${p.in}:${p.in === 'header' ? p.name.toLowerCase() : p.name}`, p]))
  const params = [...byKey.values()]
  const name = camel(op.operationId ?? `${method} ${path}`)
  const [url, { query, others }] = [pathOf(doc, path, params, vars), queryOf(doc, params, vars)]
  const lines = [`### ${firstLine(op.summary) || name}`, `# @name ${name}`]
  if (others.length) lines.push(`# optional query: ${others.join(', ')}`)
  lines.push(`${method.toUpperCase()} {{api}}${url}${query}`, authOf(doc, op))
  const body = bodyOf(doc, op)
  if (body) lines.push(`Content-Type: ${body.type}`)
  // A PATCH is conditional: If-Match even when the operation does not declare it.
  const headers = params.filter((p) => p.in === 'header')
  if (method === 'patch' && !byKey.has('header:if-match')) headers.push({ name: 'if-match' })
  for (const p of headers) {
    // The same key and body replay the first answer: the key names the operation; change it to send anew.
    const known = { 'idempotency-key': `${name}-1`, 'if-match': '"1"' }[p.name.toLowerCase()]
    const value = known ?? exampleOf(doc, p) ?? variable(vars, p.name, placeholder(p))
    lines.push(`${headerName(p.name)}: ${value}`)
  }
  if (body) lines.push('', body.text)
  return lines.filter((line) => line !== undefined).join('\n')
}

/** The text of the .http collection of an OpenAPI document: the same document, the same text. */
export function httpCollection(doc) {
  const api = new URL(doc.servers?.[0]?.url ?? '/', GATEWAY).href.replace(/\/$/, '')
  const vars = new Map().set('api', api).set('token', '<paste the token from npm run demo>')
  const requests = []
  for (const [path, item] of Object.entries(doc.paths ?? {}).map(([p, i]) => [p, resolve(doc, i)]))
    for (const method of Object.keys(item).filter((k) => METHODS.includes(k)))
      requests.push(request(doc, path, item, method, vars))
  const declarations = [...vars].map(([key, value]) => `@${key} = ${value}\n`).join('')
  return `# ${doc.info?.title ?? 'API'}: every operation, for VS Code REST Client and the JetBrains HTTP Client.
# Generated by \`npm run openapi\` from docs/openapi.json; do not edit.
# Run \`npm start\`, then \`npm run demo\` for a token. The same Idempotency-Key and body replay the first answer.

${declarations}
${requests.join('\n\n')}
`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2)
  const source = args.find((a) => a !== '--stdout') ?? new URL('../docs/openapi.json', import.meta.url)
  const text = httpCollection(JSON.parse(readFileSync(source, 'utf8')))
  if (args.includes('--stdout')) process.stdout.write(text)
  else writeFileSync(httpPath, text)
}
