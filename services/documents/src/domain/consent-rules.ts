import { createHash } from 'node:crypto'
import { ValidationFailed, assertCenter, type Ctx } from '@clinic/platform/core'
import type { ConsentStore } from './consent-store'
import type { ContentStore } from './content-store'
import type { AppointmentDirectory, ExamDirectory, PatientContact, PatientDirectory } from './directories'
import type { ConsentPdfRenderer } from './consent-pdf-renderer'

/** DESIGN.md section 16: a request expires in 7 days unless it says otherwise, in 90 at most. */
export const DEFAULT_CONSENT_DAYS = 7
export const MAX_CONSENT_DAYS = 90
export const DAY_MS = 86_400_000
/**
 * The time zone a consent's times are written in. The gateway's identity keeps no time zone per
 * center yet, so every consent takes the house's (that of appointments and practitioners too).
 */
export const DEFAULT_TIME_ZONE = 'Europe/Madrid'

export const textHash = (body: string) => createHash('sha256').update(body, 'utf8').digest('hex')

/** The patient's name as a page or PDF shows it. */
export const nameOf = (p: PatientContact | null) => (p ? `${p.first_name} ${p.last_name}` : 'unknown patient')

/** What the consent use cases are given (app.ts builds it; tests give fakes of the ports). */
export interface ConsentDeps {
  store: ConsentStore
  content: ContentStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  exams: ExamDirectory
  /** Renders a granted consent as the signed PDF (render/consent-pdf.ts). */
  renderPdf: ConsentPdfRenderer
  clock: () => Date
}

/**
 * The center of a new template or consent: the body's `codalmacen`, else the query's, else none
 * (the whole company's); a token limited to centers must name one of them, as for any record
 * (DESIGN.md section 2).
 */
export function centerOfNew(ctx: Ctx, bodyCenter: string | undefined, queryCenter: string | undefined) {
  const codalmacen = bodyCenter ?? queryCenter ?? null
  if (codalmacen !== null) assertCenter(ctx.auth, codalmacen)
  else if (ctx.auth.allowedCenters)
    throw new ValidationFailed([
      { path: '/codalmacen', message: 'is required for a token limited to centers' },
    ])
  return codalmacen
}
