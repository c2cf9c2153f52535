import {
  codesIn,
  fhirPageOf,
  NotFound,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
} from '@clinic/platform/core'
import type { Binary, DocumentReference } from '@medplum/fhirtypes'
import { CATEGORIES, type Category, type Document } from '../schemas/document'
import type { ContentStore } from './content-store'
import { ACCEPTED } from './detect-type'
import type { DocumentFhirFilter, DocumentStore } from './document-store'
import { downloadName } from './filename'
import { getDocument } from './get-document'
import { getDocumentContent, type Content } from './get-document-content'

/** Our document categories (DESIGN.md section 15) as a FHIR code system: `category=<system>|<code>`. */
export const DOCUMENT_CATEGORY_SYSTEM = 'https://clinic.example/fhir/CodeSystem/document-category'

const CATEGORY_DISPLAY: Record<Category, string> = {
  referral: 'Referral letter',
  report: 'Report',
  consent: 'Consent',
  imaging: 'Imaging',
  prescription: 'Prescription',
  identity: 'Identity document',
  other: 'Other',
}

const meta = (d: Document) => ({ versionId: String(d.version), lastUpdated: d.updated_at })

/**
 * A document as FHIR R4 `DocumentReference` (README "FHIR"): `current`, or `entered-in-error` once
 * deleted (its metadata stays, its bytes are gone); our category; the patient; when it was added;
 * the bytes as an attachment at `Binary/<id>`, titled by the title, else the download's file name
 * (no `hash`: R4's is SHA-1, we keep SHA-256); the exam as `context.encounter`, the appointment as
 * `context.related`; the company as custodian.
 */
export function toFhirDocumentReference(companyId: number, d: Document): DocumentReference {
  return {
    resourceType: 'DocumentReference',
    id: d.id,
    meta: meta(d),
    status: d.status === 'deleted' ? 'entered-in-error' : 'current',
    category: [
      {
        coding: [
          { system: DOCUMENT_CATEGORY_SYSTEM, code: d.category, display: CATEGORY_DISPLAY[d.category] },
        ],
      },
    ],
    subject: { reference: `Patient/${d.patient_id}` },
    date: d.created_at,
    custodian: { reference: `Organization/${companyId}` },
    ...(d.title ? { description: d.title } : {}),
    content: [
      {
        attachment: {
          contentType: d.content_type,
          url: `Binary/${d.id}`,
          size: d.size_bytes,
          title: d.title ?? downloadName(d.filename, ACCEPTED[d.content_type] ?? 'bin'),
          creation: d.created_at,
        },
      },
    ],
    ...(d.exam_id || d.appointment_id
      ? {
          context: {
            ...(d.exam_id ? { encounter: [{ reference: `Encounter/${d.exam_id}` }] } : {}),
            ...(d.appointment_id ? { related: [{ reference: `Appointment/${d.appointment_id}` }] } : {}),
          },
        }
      : {}),
  }
}

/**
 * A document's bytes as FHIR R4 `Binary`: its content type, the DocumentReference that governs
 * access to it as `securityContext`, and `data` (base64) when the bytes are given (a read asking for
 * application/fhir+json; a search answers without them).
 */
export function toFhirBinary(d: Document, data?: Buffer): Binary {
  return {
    resourceType: 'Binary',
    id: d.id,
    meta: meta(d),
    contentType: d.content_type,
    securityContext: { reference: `DocumentReference/${d.id}` },
    ...(data ? { data: data.toString('base64') } : {}),
  }
}

/** `GET /fhir/R4/DocumentReference/<id>`: as GET /documents/<id> sees it (deleted ones too). */
export async function readFhirDocumentReference(
  ctx: Ctx,
  store: DocumentStore,
  id: string,
): Promise<DocumentReference | null> {
  if (!isUuid(id)) return null
  return toFhirDocumentReference(ctx.auth.companyId, await getDocument(ctx, store, { id }))
}

/** The patient, category and date parameters as the store's filter, within the token's centers. */
function documentFilter(ctx: Ctx, s: FhirSearch, availableOnly: boolean): DocumentFhirFilter {
  const known = new Set<string>(CATEGORIES)
  return {
    centers: visibleCenters(ctx.auth, undefined),
    // Ids that are no UUID name no patient: that alternative matches nothing.
    patientIds: s.references('patient').map((alts) => alts.map((r) => r.id.toLowerCase()).filter(isUuid)),
    categories: s
      .tokens('category')
      .map((alts) =>
        codesIn(alts, DOCUMENT_CATEGORY_SYSTEM).filter((code): code is Category => known.has(code)),
      ),
    created: s.dates('date'),
    availableOnly,
  }
}

/** `GET /fhir/R4/DocumentReference?...`: the company's documents within the token's centers. */
export async function searchFhirDocumentReferences(
  ctx: Ctx,
  store: DocumentStore,
  search: FhirSearch,
): Promise<FhirPage<DocumentReference>> {
  const page = await store.fhirSearch(ctx.auth.companyId, documentFilter(ctx, search, false), search)
  return fhirPageOf(page, (d) => toFhirDocumentReference(ctx.auth.companyId, d))
}

/** `GET /fhir/R4/Binary?...` (`_id`, `_lastUpdated`): the documents whose bytes are held, without the bytes. */
export async function searchFhirBinaries(
  ctx: Ctx,
  store: DocumentStore,
  search: FhirSearch,
): Promise<FhirPage<Binary>> {
  const page = await store.fhirSearch(ctx.auth.companyId, documentFilter(ctx, search, true), search)
  return fhirPageOf(page, (d) => toFhirBinary(d))
}

/**
 * `GET /fhir/R4/Binary/<id>`: the download's use case (getDocumentContent: centers, 410 once
 * deleted, Range and If-Range), for an id that is a FHIR id; one that is no UUID is no document.
 */
export async function fhirBinaryContent(
  ctx: Ctx,
  deps: { store: DocumentStore; content: ContentStore },
  input: { id: string; range?: string; ifRange?: string },
): Promise<Content> {
  if (!isUuid(input.id)) throw new NotFound(`No Binary ${input.id}`)
  return getDocumentContent(ctx, deps, input)
}

/** `GET /fhir/R4/Binary/<id>` asked as application/fhir+json: the whole bytes as `data`. */
export async function readFhirBinary(
  ctx: Ctx,
  deps: { store: DocumentStore; content: ContentStore },
  id: string,
): Promise<Binary> {
  const { document, bytes } = await fhirBinaryContent(ctx, deps, { id })
  const chunks: Buffer[] = []
  for await (const chunk of bytes) chunks.push(chunk)
  return toFhirBinary(document, Buffer.concat(chunks))
}
