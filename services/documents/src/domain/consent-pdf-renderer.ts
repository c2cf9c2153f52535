import type { Consent, ConsentTemplate, Evidence } from '../schemas/consent'
import type { ClinicNames } from './consent-store'

/** What the signed PDF shows: the text as signed, on whose behalf, who asked, and the evidence. */
export interface ConsentRecord {
  consent: Consent
  template: ConsentTemplate
  evidence: Evidence
  patientName: string
  clinic: ClinicNames
}

/** The port to the PDF renderer (render/consent-pdf.ts, pdf-lib): the PDF's bytes. */
export type ConsentPdfRenderer = (record: ConsentRecord) => Promise<Buffer>
