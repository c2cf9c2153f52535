import { Type } from '@sinclair/typebox'
import { type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { ExamDirectory, OwnedRecord } from '../domain/directories'
import type { ClientOptions } from './patients-client'

const ExamFound = Type.Object({ id: Type.String(), patient_id: Type.String() })

/**
 * The clinical service's internal lookup (`GET /internal/clinical/exams/:id`), on behalf of the
 * caller (its company and centers apply as on `GET /clinical/exams/:id`): 404 is "no such exam";
 * down or odd is 503.
 */
export class ClinicalClient implements ExamDirectory {
  constructor(private readonly o: ClientOptions) {}

  find(ctx: Ctx, examId: string): Promise<OwnedRecord | null> {
    return lookUp<OwnedRecord>(ctx, this.o.signer, {
      service: 'clinical',
      baseUrl: this.o.baseUrl,
      path: `/internal/clinical/exams/${encodeURIComponent(examId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: ExamFound,
    })
  }
}
