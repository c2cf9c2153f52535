// FHIR R4 (DESIGN.md section 19): the served types and their search parameters, a search as a
// service runs it, searchset Bundles, OperationOutcome errors. Framework-free.
export * from './definitions'
export * from './search'
export * from './bundle'
export * from './outcome'
