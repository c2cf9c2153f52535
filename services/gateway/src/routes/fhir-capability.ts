import type { CapabilityStatement, CapabilityStatementRestResource } from '@medplum/fhirtypes'
import { COMMON_PARAMS, FHIR_SEARCH_PARAMS, FHIR_TYPES as SERVED } from '@clinic/platform'
import { FHIR_TYPES } from '../families'

/** HL7 FHIR Bulk Data Access IG 2.0.0's canonical base (its CapabilityStatement and operations). */
const BULK = 'http://hl7.org/fhir/uv/bulkdata'

/** The gateway's own types (identity schema): every token reads them. */
const OWN = new Set(['Organization', 'Location'])

/**
 * `GET /fhir/R4/metadata` (DESIGN.md section 19): what runs, from the same declarations the
 * services parse their searches with (FHIR_SEARCH_PARAMS) and the routing table (services.json
 * `fhir`): each type routed to a service or served by the gateway, read and search-type, its
 * search parameters; `$everything` and `$export` on Patient, `$export` of the system and of a Group
 * (a center). Read-only: no write interaction is listed.
 */
export function capabilityStatement(version: string): CapabilityStatement {
  const resource: CapabilityStatementRestResource[] = SERVED.filter(
    (t) => OWN.has(t) || FHIR_TYPES.has(t),
  ).map((type) => ({
    type,
    interaction: [{ code: 'read' }, { code: 'search-type' }],
    versioning: 'versioned',
    readHistory: false,
    updateCreate: false,
    searchParam: Object.entries({ ...COMMON_PARAMS, ...FHIR_SEARCH_PARAMS[type] }).map(([name, p]) => ({
      name,
      type: p.type,
      documentation: p.documentation,
    })),
    ...(type === 'Patient'
      ? {
          operation: [
            { name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' },
            { name: 'export', definition: `${BULK}/OperationDefinition/patient-export` },
          ],
        }
      : {}),
  }))
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    // The release's date (CalVer YYMMDD.NN).
    date: `20${version.slice(0, 2)}-${version.slice(2, 4)}-${version.slice(4, 6)}`,
    kind: 'instance',
    software: { name: 'clinic-api', version },
    implementation: { description: 'Clinic API FHIR R4 (read-only)' },
    fhirVersion: '4.0.1',
    instantiates: [`${BULK}/CapabilityStatement/bulk-data`],
    format: ['application/fhir+json', 'json'],
    rest: [
      {
        mode: 'server',
        security: {
          cors: true,
          description:
            'Bearer API tokens (Authorization: Bearer ...); each type needs the read scope of its family',
        },
        resource,
        // Bulk Data export (DESIGN.md section 19): the company's; a center's is Group/<codalmacen>/$export.
        operation: [
          { name: 'export', definition: `${BULK}/OperationDefinition/export` },
          { name: 'group-export', definition: `${BULK}/OperationDefinition/group-export` },
        ],
      },
    ],
  }
}
