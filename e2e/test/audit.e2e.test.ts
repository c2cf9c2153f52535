import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, type Tenant } from '../src/client'

let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(), makeTenant()])
})

describe('audit trail through the gateway', () => {
  it('records a patient created, updated and read, with the actor username', async () => {
    const created = await call('POST', '/patients', {
      token: a.token,
      body: { first_name: 'Aud', last_name: 'Itada', birth_date: '1990-02-03' },
    })
    expect(created.status).toBe(201)
    const id = created.body.id
    expect(
      (await call('PATCH', `/patients/${id}`, { token: a.token, body: { email: 'aud@example.test' } }))
        .status,
    ).toBe(200)
    const read = await call('GET', `/patients/${id}`, { token: a.token })
    expect(read.status).toBe(200)

    const events = await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?resource_id=${id}&limit=100`, { token: a.token })
        const actions = res.body.data?.map((e: any) => e.action) ?? []
        const readEvent = res.body.data?.find(
          (e: any) => e.action === 'http.request' && e.http?.method === 'GET',
        )
        return actions.includes('patient.created') && actions.includes('patient.updated') && readEvent
          ? res.body.data
          : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: 'create, update and read in the audit trail' },
    )
    const byAction = (action: string, method?: string) =>
      events.find((e: any) => e.action === action && (!method || e.http?.method === method))
    for (const e of [
      byAction('patient.created'),
      byAction('patient.updated'),
      byAction('http.request', 'GET'),
    ]) {
      expect(e.actor.username).toBe(a.username)
      expect(e.resource_type).toBe('patient')
      expect(e.resource_id).toBe(id)
      expect(e.outcome).toBe('success')
    }
    expect(byAction('patient.updated').changes).toEqual(['email'])
    expect(JSON.stringify(events)).not.toContain('aud@example.test')
    expect(byAction('http.request', 'GET').http).toMatchObject({
      method: 'GET',
      status: 200,
      path: `/api/patients/${id}`,
    })
    // Newest first.
    const seqs = events.map((e: any) => e.seq)
    expect([...seqs].sort((x, y) => y - x)).toEqual(seqs)
  })

  it('records denied requests and shows a company only its own events', async () => {
    const theirs = await call('POST', '/patients', {
      token: b.token,
      body: { first_name: 'Other', last_name: 'Company', birth_date: '1970-01-01' },
    })
    const denied = await call('GET', `/patients/${theirs.body.id}`, { token: a.token })
    expect(denied.status).toBe(404)
    await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?outcome=failure&resource_id=${theirs.body.id}`, {
          token: a.token,
        })
        return res.body.data?.some((e: any) => e.http?.status === 404 && e.actor.username === a.username)
      },
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: 'the denied read in the audit trail' },
    )
    const mine = await call('GET', `/audit/events?resource_id=${theirs.body.id}&action=patient.created`, {
      token: a.token,
    })
    expect(mine.body.data).toEqual([])
    expect(mine.body.meta.total).toBe(0)
    const own = await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?resource_id=${theirs.body.id}&action=patient.created`, {
          token: b.token,
        })
        return res.body.data?.length ? res.body : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: "B's own event" },
    )
    expect(own.data[0].actor.username).toBe(b.username)
  })
})
