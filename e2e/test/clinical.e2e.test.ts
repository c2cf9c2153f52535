import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, tokenFor, type Tenant } from '../src/client'

/**
 * The clinical record from outside, through the gateway (DESIGN.md section 14): signed is final,
 * racing amendments both land, signing needs a token that names clinical:sign, every read is on
 * the audit trail and the events reach the change feed.
 */
let t: Tenant
let patientId: string
beforeAll(async () => {
  t = await makeTenant(['ALM1', 'ALM2'])
  const p = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Testa', last_name: 'Ocular', birth_date: '1960-02-03', codalmacen: 'ALM1' },
  })
  expect(p.status).toBe(201)
  patientId = p.body.id
})

const post = (path: string, body?: unknown, token = t.token) => call('POST', path, { token, body })
const IOP = { eye: 'right', mmhg: 24, method: 'goldmann', measured_at: '2026-11-20T09:15:00Z' }

async function signedExam() {
  const exam = await post('/clinical/exams', { patient_id: patientId, practitioner: 'dra-ocular' })
  expect([exam.status, exam.body.codalmacen]).toEqual([201, 'ALM1'])
  const iop = await post(`/clinical/exams/${exam.body.id}/iop`, IOP)
  expect(iop.status).toBe(201)
  const signed = await post(`/clinical/exams/${exam.body.id}/sign`)
  expect(signed.status).toBe(200)
  return { exam: signed.body, iopId: iop.body.id as string }
}

describe('clinical records through the gateway', () => {
  it('signed is final: PATCH, a finding’s POST or DELETE are 409 exam_signed, and nothing changed', async () => {
    const { exam, iopId } = await signedExam()
    const attempts = [
      await call('PATCH', `/clinical/exams/${exam.id}`, { token: t.token, body: { notes: 'x' } }),
      await post(`/clinical/exams/${exam.id}/iop`, IOP),
      await call('DELETE', `/clinical/exams/${exam.id}/iop/${iopId}`, { token: t.token }),
    ]
    for (const res of attempts) {
      expect(res.status).toBe(409)
      expect(res.headers.get('content-type')).toContain('application/problem+json')
      expect(res.headers.get('x-service-version')).toBeTruthy()
      expect(res.body.code).toBe('exam_signed')
    }
    const read = await call('GET', `/clinical/exams/${exam.id}`, { token: t.token })
    expect(read.body).toEqual(exam)
  })

  it('needs a token that names clinical:sign to sign: one made without a list cannot', async () => {
    const exam = await post('/clinical/exams', { patient_id: patientId, practitioner: 'dra-ocular' })
    // Something to sign: an exam with no finding at all is 409 exam_empty.
    expect((await post(`/clinical/exams/${exam.body.id}/iop`, IOP)).status).toBe(201)
    const plain = await tokenFor(t, '--scopes', 'clinical:read,clinical:write')
    const refused = await post(`/clinical/exams/${exam.body.id}/sign`, undefined, plain)
    expect([refused.status, refused.body.code, refused.body.detail]).toEqual([
      403,
      'insufficient_scope',
      expect.stringContaining('clinical:sign'),
    ])
    const signer = await tokenFor(t, '--scopes', 'clinical:read,clinical:sign')
    expect((await post(`/clinical/exams/${exam.body.id}/sign`, undefined, signer)).status).toBe(200)
  })

  it('two amendments racing each other leave two versions, none lost', async () => {
    const { exam } = await signedExam()
    const amend = (code: string) =>
      post(`/clinical/exams/${exam.id}/amendments`, {
        reason: `añade ${code}`,
        add: { diagnoses: [{ code, system: 'icd10cm', eye: 'right' }] },
      })
    const answers = await Promise.all([amend('H40.11'), amend('H25.1')])
    expect(answers.map((a) => a.status)).toEqual([200, 200])
    const read = (await call('GET', `/clinical/exams/${exam.id}`, { token: t.token })).body
    expect(read.amendments).toBe(2)
    expect(read.diagnoses.map((d: { code: string }) => d.code).sort()).toEqual(['H25.1', 'H40.11'])
    const history = (await call('GET', `/clinical/exams/${exam.id}/history`, { token: t.token })).body.data
    expect(history.filter((v: { action: string }) => v.action === 'amended')).toHaveLength(2)
    expect(new Set(history.map((v: { version: number }) => v.version)).size).toBe(history.length)
  })

  it('puts every read on the audit trail and its events in the change feed', async () => {
    const { exam } = await signedExam()
    const reads = [
      `/clinical/exams/${exam.id}`,
      `/clinical/exams/${exam.id}/history`,
      `/clinical/patients/${patientId}/measurements?type=iop&eye=right`,
    ]
    for (const path of reads) expect((await call('GET', path, { token: t.token })).status).toBe(200)
    await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?action=http.request&resource_type=clinical&limit=100`, {
          token: t.token,
        })
        const paths = (res.body.data ?? []).map((e: { http?: { path: string } }) => e.http?.path)
        return reads.every((r) => paths.includes(`/api${r.split('?')[0]}`)) || null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 250, what: 'the clinical reads on the audit trail' },
    )
    const types = await waitFor(
      async () => {
        const res = await call('GET', '/events?types=clinical.exam.created,clinical.exam.signed&limit=100', {
          token: t.token,
        })
        const mine = (res.body.data ?? []).filter((e: { data: { id: string } }) => e.data.id === exam.id)
        return mine.length === 2 ? mine.map((e: { type: string }) => e.type) : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 250, what: 'the exam events in the feed' },
    )
    expect(types).toEqual(['clinical.exam.created', 'clinical.exam.signed'])
  })
})
