// The validator ships no types: what these tests use of it.
declare module '@asymmetrik/fhir-json-schema-validator' {
  export default class JSONSchemaValidator {
    constructor(schema?: object, ajvSettings?: object)
    /** Ajv errors; empty when the resource is valid. */
    validate(resource: unknown, verbose?: boolean): unknown[]
  }
}
