import type { Bundle, Resource } from '@medplum/fhirtypes'
import type { Exam } from '../schemas/exam'
import {
  bundleEncounter,
  encounterOf,
  findingResource,
  visionPrescription,
  type FindingVersions,
} from './fhir'

/**
 * The exam as a FHIR R4 Bundle (DESIGN 14.4): an Encounter, an Observation per live measurement, a
 * Condition per live diagnosis, a VisionPrescription per prescription; superseded findings are left
 * out (the history keeps them). Entries refer to each other by `urn:uuid:` (a collection is not a
 * server's resources: there are no relative URLs to resolve); the patient and the practitioner by
 * the ids section 19 serves them under.
 */

/**
 * `findings: 'live'` (the exam as it stands, what GET answers) leaves superseded findings out;
 * `'all'` shows them too, `entered-in-error`, as a history of the record would.
 */
export function examBundle(
  exam: Exam,
  versions: FindingVersions,
  now: Date,
  o: { findings: 'live' | 'all' } = { findings: 'live' },
): Bundle {
  const live = <T extends { state: string }>(list: T[]) =>
    o.findings === 'all' ? list : list.filter((f) => f.state === 'live')
  const resources: Resource[] = [
    encounterOf(exam),
    ...live(exam.visual_acuity).map((a) =>
      findingResource(exam, 'visual_acuity', a, versions, bundleEncounter),
    ),
    ...live(exam.iop).map((p) => findingResource(exam, 'iop', p, versions, bundleEncounter)),
    ...live(exam.refraction).map((r) => findingResource(exam, 'refraction', r, versions, bundleEncounter)),
    ...live(exam.diagnoses).map((d) => findingResource(exam, 'diagnoses', d, versions, bundleEncounter)),
    ...exam.prescriptions.map((p) => visionPrescription(exam, p, bundleEncounter)),
  ]
  return {
    resourceType: 'Bundle',
    id: exam.id,
    type: 'collection',
    timestamp: now.toISOString(),
    entry: resources.map((resource) => ({ fullUrl: `urn:uuid:${resource.id!}`, resource })),
  }
}
