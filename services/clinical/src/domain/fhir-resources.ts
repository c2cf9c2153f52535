import {
  fhirPageOf,
  centerVisible,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
  type TokenValue,
} from '@clinic/platform/core'
import type {
  Coding,
  Condition,
  Encounter,
  Observation,
  Resource,
  VisionPrescription,
} from '@medplum/fhirtypes'
import type { ExamRow } from '../schemas/exam'
import { findingOf } from './exam-contents'
import type {
  ExamFhirStore,
  FhirFindingRecord,
  FhirPrescriptionRecord,
  ObservationSelector,
} from './exam-store'
import { encounterOf, findingResource, servedEncounter, visionPrescription } from './fhir'
import { ACUITY_CODES, IOP_CODE, REFRACTION_CODE } from './fhir-codes'
import type { FindingKind } from './finding-rules'

/**
 * The exams as FHIR R4 resources of the API (DESIGN.md sections 14.4 and 19): Encounter (the
 * exam), Observation (a measurement), Condition (a diagnosis), VisionPrescription, each built by
 * fhir.ts's mapping (the exam Bundle's, the same codes) with relative references (`Patient/<id>`,
 * `Encounter/<exam id>`, `Practitioner/<id>`) and `meta`:
 *
 * - Encounter: the exam's `version` and `updated_at`.
 * - Observation, Condition: a finding has no version of its own, and its resource changes only
 *   with its exam (status at signing, an amendment superseding it, a draft's fields): the exam's
 *   `version` and `updated_at`, which every such change moves on. `_lastUpdated`, `_sort` and
 *   paging read that same column.
 * - VisionPrescription: its own `version` and `issued_at` (append-only; its exam is signed).
 *
 * A superseded finding stays readable by id and is found by search, `entered-in-error` (a client
 * synchronising by `_lastUpdated` learns that what it had was withdrawn). A token limited to
 * centers sees only its centers' exams; another company's id is not found.
 */

export const OBSERVATION_KINDS: FindingKind[] = ['visual_acuity', 'iop', 'refraction']
export const CONDITION_KINDS: FindingKind[] = ['diagnoses']

const withMeta = <R extends Resource>(resource: R, version: number, lastUpdated: string): R => ({
  ...resource,
  meta: { versionId: String(version), lastUpdated },
})

const encounterResource = (exam: ExamRow): Encounter =>
  withMeta(encounterOf(exam), exam.version, exam.updated_at)

const findingResourceOf = (f: FhirFindingRecord) =>
  withMeta(
    findingResource(f.exam, f.kind, findingOf(f), { addedIn: { [f.id]: f.added_in } }, servedEncounter),
    f.exam.version,
    f.exam.updated_at,
  )

function prescriptionResource(p: FhirPrescriptionRecord): VisionPrescription {
  const { practitioner, ...prescription } = p
  return withMeta(
    visionPrescription({ id: p.exam_id, practitioner }, prescription, servedEncounter),
    p.version,
    p.issued_at,
  )
}

/** Every Observation `code` fhir.ts writes (the same constants), with the findings that get it. */
const OBSERVATION_CODES: ReadonlyArray<{ coding: Coding; selector: ObservationSelector }> = [
  ...Object.entries(ACUITY_CODES).map(([acuityKind, coding]) => ({
    coding,
    selector: { kind: 'visual_acuity' as const, acuityKind },
  })),
  { coding: IOP_CODE, selector: { kind: 'iop' } },
  { coding: REFRACTION_CODE, selector: { kind: 'refraction' } },
]

/** The findings an Observation `code` names (`<system>|<code>`, or `<code>` of any system). */
export function observationSelectors(alternatives: TokenValue[]): ObservationSelector[] {
  return OBSERVATION_CODES.filter(({ coding }) =>
    alternatives.some((t) => t.code === coding.code && (t.system === null || t.system === coding.system)),
  ).map((c) => c.selector)
}

const centersOf = (ctx: Ctx) => visibleCenters(ctx.auth, undefined)
const visible = <T extends { codalmacen: string }>(ctx: Ctx, row: T | null): T | null =>
  row && centerVisible(centersOf(ctx), row.codalmacen) ? row : null

/** `GET /fhir/R4/Encounter/<exam id>`: an exam of the company within the token's centers, else null. */
export async function readEncounter(ctx: Ctx, store: ExamFhirStore, id: string): Promise<Encounter | null> {
  if (!isUuid(id)) return null
  const exam = visible(ctx, await store.fhirExam(ctx.auth.companyId, id))
  return exam ? encounterResource(exam) : null
}

/** `GET /fhir/R4/Encounter?...`: `patient`, `date` (`performed_at`, the period's start). */
export async function searchEncounters(
  ctx: Ctx,
  store: ExamFhirStore,
  search: FhirSearch,
): Promise<FhirPage<Encounter>> {
  return fhirPageOf(await store.fhirExams(ctx.auth.companyId, centersOf(ctx), search), encounterResource)
}

async function readFinding(ctx: Ctx, store: ExamFhirStore, kinds: FindingKind[], id: string) {
  if (!isUuid(id)) return null
  const f = await store.fhirFinding(ctx.auth.companyId, kinds, id)
  return f && visible(ctx, f.exam) ? findingResourceOf(f) : null
}

/** `GET /fhir/R4/Observation/<finding id>`: an acuity, IOP or refraction, superseded ones included. */
export const readObservation = (ctx: Ctx, store: ExamFhirStore, id: string) =>
  readFinding(ctx, store, OBSERVATION_KINDS, id) as Promise<Observation | null>

/** `GET /fhir/R4/Condition/<finding id>`: a diagnosis, superseded ones included. */
export const readCondition = (ctx: Ctx, store: ExamFhirStore, id: string) =>
  readFinding(ctx, store, CONDITION_KINDS, id) as Promise<Condition | null>

/**
 * `GET /fhir/R4/Observation?...`: `patient`, `date` (effectiveDateTime: IOP's `measured_at`, else
 * the exam's `performed_at`), `code` (the codes fhir.ts writes), `encounter`.
 */
export async function searchObservations(
  ctx: Ctx,
  store: ExamFhirStore,
  search: FhirSearch,
): Promise<FhirPage<Observation>> {
  const codes = search.tokens('code').map(observationSelectors)
  const page = await store.fhirFindings(
    ctx.auth.companyId,
    centersOf(ctx),
    { kinds: OBSERVATION_KINDS, codes, date: 'effective' },
    search,
  )
  return fhirPageOf(page, (f) => findingResourceOf(f) as Observation)
}

/** `GET /fhir/R4/Condition?...`: `patient`, `date` (recordedDate: when the diagnosis was recorded). */
export async function searchConditions(
  ctx: Ctx,
  store: ExamFhirStore,
  search: FhirSearch,
): Promise<FhirPage<Condition>> {
  const page = await store.fhirFindings(
    ctx.auth.companyId,
    centersOf(ctx),
    { kinds: CONDITION_KINDS, codes: [], date: 'recorded' },
    search,
  )
  return fhirPageOf(page, (f) => findingResourceOf(f) as Condition)
}

/** `GET /fhir/R4/VisionPrescription/<id>`: a prescription under its exam's center rules. */
export async function readVisionPrescription(
  ctx: Ctx,
  store: ExamFhirStore,
  id: string,
): Promise<VisionPrescription | null> {
  if (!isUuid(id)) return null
  const p = visible(ctx, await store.fhirPrescription(ctx.auth.companyId, id))
  return p ? prescriptionResource(p) : null
}

/** `GET /fhir/R4/VisionPrescription?...`: `patient`. */
export async function searchVisionPrescriptions(
  ctx: Ctx,
  store: ExamFhirStore,
  search: FhirSearch,
): Promise<FhirPage<VisionPrescription>> {
  return fhirPageOf(
    await store.fhirPrescriptions(ctx.auth.companyId, centersOf(ctx), search),
    prescriptionResource,
  )
}
