import pino from 'pino'
import {
  assertOffsetOrAfter,
  causeOf,
  ctxFromEvent,
  encodeCursor,
  keyset,
  keysetPage,
  makeEvent,
  type AppError,
  type KeysetFetch,
} from '../../src/entry/core'
import { FakeTenantStore, testCtx, testPrincipal } from '../../src/testing'

const id = '0190c5a0-0000-7000-8000-000000000001'
const byName = keyset({
  tag: 'l',
  order: 'asc',
  columns: [
    { name: 'last_name', kind: 'text' },
    { name: 'id', kind: 'uuid' },
  ],
})
const newest = keyset({
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})
const bySeq = keyset({ order: 'desc', columns: [{ name: 'seq', kind: 'seq' }] })

const refusal = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    const e = err as AppError
    return [e.status, e.code, (e as unknown as { errors: unknown }).errors]
  }
  return 'accepted'
}

describe('keyset', () => {
  it('round-trips the sort values of a row, behind the tag', () => {
    const row = { last_name: 'Ficticia', id, created_at: '2026-01-01T00:00:00.000Z', seq: 7 }
    expect(byName.parse(byName.cursorOf(row))).toEqual({ last_name: 'Ficticia', id })
    expect(newest.parse(newest.cursorOf(row))).toEqual({ created_at: row.created_at, id })
    expect(bySeq.parse(bySeq.cursorOf(row))).toEqual({ seq: 7 })
  })

  it.each([
    ['a forged instant', newest, ['2026-02-30T10:00:00.000Z', id]],
    ['an instant not as the lists write it', newest, ['2026-01-01T00:00:00Z', id]],
    ['a non-UUID', newest, ['2026-01-01T00:00:00.000Z', 'not-a-uuid']],
    ['the wrong arity', newest, ['2026-01-01T00:00:00.000Z']],
    ['a NUL', byName, ['l', 'a\u0000b', id]],
    ['another sort’s tag', byName, ['c', 'Ficticia', id]],
    ['a seq that is no positive integer', bySeq, [0]],
    ['a seq as a string', bySeq, ['7']],
  ] as const)('refuses %s: 400 validation_failed naming /after', (_case, ks, values) => {
    const [status, code, errors] = refusal(() => ks.parse(encodeCursor([...values])))
    expect([status, code]).toEqual([400, 'validation_failed'])
    expect(errors).toEqual([
      { path: '/after', message: expect.stringMatching(/^is not a cursor from meta.next/) },
    ])
  })

  it('refuses offset together with after; offset 0 is no conflict', () => {
    expect(refusal(() => assertOffsetOrAfter({ offset: 2, after: 'x' }))).toEqual([
      400,
      'validation_failed',
      [{ path: '/offset', message: 'cannot be combined with after' }],
    ])
    expect(refusal(() => assertOffsetOrAfter({ offset: 0, after: 'x' }))).toBe('accepted')
    expect(refusal(() => assertOffsetOrAfter({ offset: 2 }))).toBe('accepted')
  })
})

describe('keysetPage', () => {
  const rows = [3, 2, 1].map((seq) => ({ seq }))
  const fetch = async (_filter: unknown, page: KeysetFetch<'seq'>) => {
    const past = rows.filter((r) => page.after === undefined || r.seq < Number(page.after.seq))
    return { rows: past.slice(page.offset, page.offset + page.limit), total: rows.length }
  }
  const list = (input: { offset: number; limit: number; after?: string }) =>
    keysetPage(input, { keyset: bySeq, filter: () => null, fetch })

  it('asks one row more than the page, and gives a cursor only when there is a next page', async () => {
    const first = await list({ offset: 0, limit: 2 })
    expect(first.data).toEqual([{ seq: 3 }, { seq: 2 }])
    expect(first.meta).toMatchObject({ total: 3, offset: 0, limit: 2, next: expect.any(String) })
    const second = await list({ offset: 0, limit: 2, after: first.meta.next! })
    expect([second.data, second.meta.next]).toEqual([[{ seq: 1 }], null])
  })

  it('refuses offset with after before the filter and the cursor are looked at', async () => {
    const filter = jest.fn()
    await expect(
      keysetPage({ offset: 1, limit: 2, after: 'x' }, { keyset: bySeq, filter, fetch }),
    ).rejects.toMatchObject({
      status: 400,
      errors: [{ path: '/offset', message: 'cannot be combined with after' }],
    })
    expect(filter).not.toHaveBeenCalled()
  })
})

describe('ctxFromEvent', () => {
  it('gives a consumer the Ctx of the request that caused the event, and causeOf gives it back', () => {
    const ctx = testCtx(testPrincipal())
    const event = makeEvent({
      type: 'http.refused',
      source: 'test',
      companyId: ctx.auth.companyId,
      ctx,
      data: { ip: '127.0.0.1', count: 1, window_start: '2026-01-01T00:00:00.000Z', paths: [] },
    })
    const fromEvent = ctxFromEvent(event, pino({ level: 'silent' }))
    expect(fromEvent.auth).toMatchObject({
      companyId: ctx.auth.companyId,
      userId: ctx.auth.userId,
      username: ctx.auth.username,
      tokenId: ctx.auth.tokenId,
      allowedCenters: null,
    })
    expect(fromEvent.requestId).toBe(ctx.requestId)
    expect(causeOf(fromEvent)).toEqual({
      actorid: ctx.auth.userId,
      actorname: ctx.auth.username,
      actortokenid: ctx.auth.tokenId,
      requestid: ctx.requestId,
    })
  })

  it('an event without an actor gives a cause without one', () => {
    const event = makeEvent({
      type: 'http.refused',
      source: 'test',
      companyId: 3,
      data: { ip: '127.0.0.1', count: 1, window_start: '2026-01-01T00:00:00.000Z', paths: [] },
    })
    expect(causeOf(ctxFromEvent(event, pino({ level: 'silent' })))).toEqual({})
  })
})

describe('FakeTenantStore', () => {
  const store = () =>
    new FakeTenantStore<{ put(n: number): void }, { id: string; n: number }>((scope) => ({
      put: (n) => {
        scope.put({ id: 'a', n })
        scope.publish([])
      },
    }))

  it('keeps nothing of a transaction that throws', async () => {
    const s = store()
    await s.transaction(1, async (tx) => tx.put(1))
    await expect(
      s.transaction(1, async (tx) => {
        tx.put(2)
        throw new Error('rolled back')
      }),
    ).rejects.toThrow('rolled back')
    expect(await s.findById(1, 'a')).toEqual({ id: 'a', n: 1 })
    expect(await s.findById(2, 'a')).toBeNull()
  })
})
