import { testPrincipal } from '@clinic/platform/testing'
import {
  computeHash,
  GENESIS_HASH,
  sealEvent,
  toAuditDraft,
  type AuditEvent,
} from '../../src/domain/audit-event'
import { formatVerifyResult, verifyChain } from '../../src/domain/verify-chain'
import { verifyCompany, type ChainReader } from '../../src/domain/verify-company'
import { domainEvent, patientData } from '../helpers'

function chain(company: number, n: number, anchor = { seq: 0, hash: GENESIS_HASH }): AuditEvent[] {
  const principal = testPrincipal({ companyId: company })
  const out: AuditEvent[] = []
  let prev = anchor.hash
  for (let i = 1; i <= n; i++) {
    const e = sealEvent(toAuditDraft(domainEvent('patient.created', patientData(), { principal })), {
      seq: anchor.seq + i,
      prevHash: prev,
      recordedAt: new Date(Date.UTC(2026, 10, 22, 9, 0, i)),
    })
    out.push(e)
    prev = e.hash
  }
  return out
}
const headOf = (events: AuditEvent[]) => ({ seq: events.at(-1)!.seq, hash: events.at(-1)!.hash })

describe('verifyChain', () => {
  it('accepts an intact chain', () => {
    const events = chain(7, 5)
    const r = verifyChain(7, events, headOf(events))
    expect(r).toEqual({ ok: true, company: 7, count: 5, lastSeq: 5 })
    expect(formatVerifyResult(r)).toBe('ok: company 7, 5 events, chain intact')
    expect(verifyChain(7, [], null)).toMatchObject({ ok: true, count: 0 })
  })

  it('names an edited event', () => {
    const events = chain(7, 5)
    events[2] = { ...events[2]!, actor: { ...events[2]!.actor, username: 'mallory' } }
    const r = verifyChain(7, events, headOf(events))
    expect(r).toMatchObject({ ok: false, seq: 3, eventId: events[2]!.id })
    expect(formatVerifyResult(r)).toBe(
      `broken: company 7 at seq 3 (event ${events[2]!.id}): hash does not match the event's contents`,
    )
  })

  it('names a re-hashed edit by the broken link after it', () => {
    const events = chain(7, 5)
    const edited = { ...events[1]!, action: 'patient.updated' }
    events[1] = { ...edited, hash: computeHash(edited) }
    expect(verifyChain(7, events, headOf(events))).toMatchObject({
      ok: false,
      seq: 3,
      reason: "prev_hash does not match the previous event's hash",
    })
  })

  it('names a deleted event, a repeated seq, a foreign event and a truncated end', () => {
    const events = chain(7, 5)
    const head = headOf(events)
    expect(
      verifyChain(
        7,
        events.filter((e) => e.seq !== 2),
        head,
      ),
    ).toMatchObject({ ok: false, seq: 3, reason: 'missing seq 2' })
    expect(verifyChain(7, [...events.slice(0, 3), events[2]!, ...events.slice(3)], head)).toMatchObject({
      ok: false,
      seq: 3,
    })
    const other = chain(8, 1)
    expect(verifyChain(7, [...events, { ...other[0]!, seq: 6 }], head)).toMatchObject({ ok: false, seq: 6 })
    expect(verifyChain(7, events.slice(0, 4), head)).toMatchObject({
      ok: false,
      seq: 5,
      eventId: null,
      reason: 'events missing: the chain head is at seq 5',
    })
  })

  it('resumes from a retention anchor', () => {
    const dropped = chain(7, 3)
    const kept = chain(7, 2, headOf(dropped))
    expect(verifyChain(7, kept, headOf(kept), headOf(dropped))).toMatchObject({
      ok: true,
      count: 2,
      lastSeq: 5,
    })
    expect(verifyChain(7, kept, headOf(kept))).toMatchObject({ ok: false, seq: 4, reason: 'missing seq 1' })
  })
})

describe('verifyCompany', () => {
  it('reads up to the head it saw first, so later appends do not break it', async () => {
    const events = chain(9, 4)
    const head = headOf(events.slice(0, 3))
    const reader: ChainReader = {
      head: async () => head,
      anchor: async () => null,
      events: async function* (_c, from, until) {
        for (const e of events) if (e.seq > from && e.seq <= until) yield e
      },
    }
    await expect(verifyCompany(reader, 9)).resolves.toMatchObject({ ok: true, count: 3 })
  })
})
