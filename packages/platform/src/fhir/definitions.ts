/**
 * The FHIR R4 types we serve and the search parameters of each (DESIGN.md section 19), in one
 * place: each service parses its searches with these (fhir/search.ts refuses any other parameter),
 * and the gateway's CapabilityStatement lists exactly these, so what metadata says is what runs.
 */

/** How a parameter's value is read (FHIR's search parameter types). */
export type FhirParamType = 'token' | 'string' | 'date' | 'reference'

export interface FhirParam {
  type: FhirParamType
  /** For a reference: the types it may name (`Patient/<id>`; a bare id is taken as the first). */
  target?: readonly string[]
  documentation: string
}

const patient: FhirParam = {
  type: 'reference',
  target: ['Patient'],
  documentation: 'The patient (`Patient/<id>` or `<id>`)',
}
const date = (what: string): FhirParam => ({
  type: 'date',
  documentation: `${what}; prefixes eq (default), gt, ge, lt, le; precision year to instant`,
})

/** Every served type, each with its own parameters (the common ones are in COMMON_PARAMS). */
export const FHIR_SEARCH_PARAMS = {
  Organization: {},
  Location: {},
  Patient: {
    identifier: { type: 'token', documentation: 'A national id (`<system>|<value>` or `<value>`)' },
    name: { type: 'string', documentation: 'Start of the given or family name (any case, accents kept)' },
    family: { type: 'string', documentation: 'Start of the family name (any case)' },
    birthdate: date('The date of birth'),
  },
  Practitioner: {},
  Schedule: {},
  Slot: {
    schedule: {
      type: 'reference',
      target: ['Schedule'],
      documentation: 'The schedule (`Schedule/<id>`: one practitioner at one center)',
    },
    start: date('The slot start'),
    status: { type: 'token', documentation: '`free` or `busy`' },
  },
  Appointment: {
    patient,
    practitioner: {
      type: 'reference',
      target: ['Practitioner'],
      documentation: 'The practitioner (`Practitioner/<id>`)',
    },
    date: date('The appointment start'),
    status: { type: 'token', documentation: 'booked, arrived, fulfilled, cancelled, noshow ...' },
    location: {
      type: 'reference',
      target: ['Location'],
      documentation: 'The center (`Location/<codalmacen>`)',
    },
  },
  Encounter: { patient, date: date('The exam date') },
  Observation: {
    patient,
    date: date('The exam date'),
    code: { type: 'token', documentation: 'The LOINC or SNOMED CT code (`<system>|<code>` or `<code>`)' },
    encounter: { type: 'reference', target: ['Encounter'], documentation: 'The exam (`Encounter/<id>`)' },
  },
  Condition: { patient, date: date('The exam date (recorded)') },
  VisionPrescription: { patient },
  DocumentReference: {
    patient,
    category: { type: 'token', documentation: 'The document category' },
    date: date('When the document was added'),
  },
  Binary: {},
  Consent: { patient, status: { type: 'token', documentation: 'proposed, active, rejected, inactive' } },
  Communication: { patient, sent: date('When the message left') },
  AuditEvent: {
    date: date('When it happened'),
    entity: { type: 'reference', documentation: 'What was accessed or changed (`<Type>/<id>`)' },
    agent: { type: 'reference', documentation: 'Who (`Practitioner/<user id>` or `Device/<token id>`)' },
  },
} as const satisfies Record<string, Record<string, FhirParam>>

export type FhirType = keyof typeof FHIR_SEARCH_PARAMS
export const FHIR_TYPES = Object.keys(FHIR_SEARCH_PARAMS) as FhirType[]
export const isFhirType = (t: string): t is FhirType => Object.hasOwn(FHIR_SEARCH_PARAMS, t)

/** The parameters every type takes (and the paging parameter of our `next` links). */
export const COMMON_PARAMS: Record<string, FhirParam> = {
  _id: { type: 'token', documentation: 'One or more ids, comma-separated' },
  _lastUpdated: date('meta.lastUpdated'),
}
/** Result parameters: `_count` (default 50, at most 1000; 0 answers the total only), `_sort`. */
export const DEFAULT_COUNT = 50
export const MAX_COUNT = 1000

/** The types with a `patient` parameter: what `Patient/<id>/$everything` gathers, in this order. */
export const PATIENT_COMPARTMENT: readonly FhirType[] = FHIR_TYPES.filter(
  (t) => 'patient' in FHIR_SEARCH_PARAMS[t],
)

/** The FHIR base under every API base, and what a service sees: `/fhir/R4`. */
export const FHIR_BASE = '/fhir/R4'
export const FHIR_CONTENT_TYPE = 'application/fhir+json; charset=utf-8'
/**
 * The absolute FHIR base as the client reached it (`https://clinic.example.com/api/fhir/R4`): the
 * gateway sends it to the service, which writes it in a Bundle's fullUrls and links. A client
 * cannot set it (the gateway drops `x-clinic-*` headers from clients).
 */
export const FHIR_BASE_HEADER = 'x-clinic-fhir-base'
/**
 * A Bulk Data export's PostgreSQL snapshot (pg_export_snapshot), which the gateway's export job
 * holds: a search sent with it reads the data as of that snapshot, so every page of the export sees
 * one state. No client sets it (the gateway drops every x-clinic- header a client sends).
 */
export const FHIR_SNAPSHOT_HEADER = 'x-clinic-fhir-snapshot'

/**
 * A center as FHIR `Location/<id>`: its code, with `_` (which a FHIR id may not hold) written `.`
 * (which a code may not hold), so the two convert both ways without loss.
 */
export const locationIdOf = (codalmacen: string): string => codalmacen.replace(/_/g, '.')
/** The center code of a Location id (locationIdOf's inverse). */
export const centerOfLocationId = (id: string): string => id.replace(/\./g, '_')
