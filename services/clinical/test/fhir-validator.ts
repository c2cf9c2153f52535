import { fhirSchemaErrors, structureIssues } from '@clinic/platform/testing'

// The two third-party validators (packages/platform/src/testing/fhir-validator.ts).
export { structureIssues }
export const fhirErrors = fhirSchemaErrors

/**
 * What every bundle the tests make goes through: both validators, on the Bundle and on each of its
 * resources, with no error and no warning that docs/DESIGN.md does not explain.
 */
export function expectValidBundle(bundle: { entry?: Array<{ resource?: unknown }> }): void {
  for (const resource of [bundle, ...(bundle.entry ?? []).map((e) => e.resource)]) {
    expect(fhirErrors(resource)).toEqual([])
    expect(structureIssues(resource)).toEqual({ errors: [], warnings: [] })
  }
}
