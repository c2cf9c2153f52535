import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { CompactSign } from 'jose'
import {
  AssertionBatcher,
  MAX_BATCH,
  signAssertion,
  signAssertionInBatch,
  verifyAssertion,
  type AssertionClaims,
} from '@clinic/platform'
import { BATCH_TYPE, leafHash, rootOf, signBatch } from '../../src/assertion-batch'
import { testPrincipal } from '@clinic/platform/testing'

const pair = generateKeyPairSync('ed25519')
const signer = { issuer: 'gateway', key: pair.privateKey }
const other = generateKeyPairSync('ed25519')
const claimsFor = (i: number): AssertionClaims => ({
  ...testPrincipal({ companyId: 7 }),
  aud: 'patients',
  requestId: `req-${i}`,
  method: 'GET',
  path: `/patients/${i}`,
  query: '',
  bodyHash: '',
})
const expectFor = (i: number) => ({ method: 'GET', path: `/patients/${i}`, audience: 'patients' })

/** The keys a service holds, counting how often a signature needed one (a check the cache did not spare). */
class CountingKeys extends Map<string, KeyObject> {
  lookups = 0
  override get(name: string) {
    this.lookups++
    return super.get(name)
  }
}
/** A key set of its own per test: checked batches are remembered per key set. */
const freshKeys = () => new CountingKeys([['gateway', pair.publicKey]])

/** n assertions signed together, as the gateway's batcher does in one turn of its event loop. */
async function batchOf(n: number, batcher = new AssertionBatcher(signer)) {
  return Promise.all(Array.from({ length: n }, (_, i) => signAssertionInBatch(claimsFor(i), signer, batcher)))
}
const partsOf = (token: string) => token.split('~') as [string, string, string]
const b64 = (s: string) => Buffer.from(s).toString('base64url')

describe('Merkle inclusion proofs (RFC 9162)', () => {
  it('every leaf of every batch size proves the signed root, and no other leaf does', async () => {
    for (const size of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, MAX_BATCH]) {
      const payloads = Array.from({ length: size }, (_, i) => b64(`payload-${size}-${i}`))
      const tokens = await signBatch(payloads, signer)
      expect(new Set(tokens.map((t) => partsOf(t)[0])).size).toBe(1) // one JWS
      const signed = JSON.parse(Buffer.from(partsOf(tokens[0]!)[0].split('.')[1]!, 'base64url').toString())
      expect(signed).toMatchObject({ iss: 'gateway', size })
      const roots = tokens.map((token, i) => {
        const [, claims, proofText] = partsOf(token)
        expect(claims).toBe(payloads[i])
        const proof = Buffer.from(proofText, 'base64url')
        const path = []
        for (let at = 4; at < proof.length; at += 32) path.push(proof.subarray(at, at + 32))
        expect(proof.readUInt16BE(0)).toBe(size)
        expect(proof.readUInt16BE(2)).toBe(i)
        // Another leaf, index or size with this path leads nowhere or elsewhere.
        const root = rootOf(leafHash(payloads[i]!), i, size, path)!
        if (size > 1) {
          const j = (i + 1) % size
          expect(rootOf(leafHash(payloads[j]!), i, size, path)).not.toEqual(root)
          expect(rootOf(leafHash(payloads[i]!), j, size, path)).not.toEqual(root)
          expect(rootOf(leafHash(payloads[i]!), i, size, path.slice(1))).not.toEqual(root)
        }
        expect(rootOf(leafHash(payloads[i]!), size, size, path)).toBeNull()
        expect(rootOf(leafHash(payloads[i]!), i, size, [...path, path[0] ?? Buffer.alloc(32)])).toBeNull()
        return root.toString('base64url')
      })
      expect(new Set(roots)).toEqual(new Set([signed.root]))
    }
  })
})

describe("assertions signed in batches: a JWS over the root, each request's claims and proof beside it", () => {
  it('verify as one assertion alone does, each bound to its own request', async () => {
    const tokens = await batchOf(5)
    const keys = freshKeys()
    for (const [i, t] of tokens.entries()) {
      const [jws] = partsOf(t)
      expect(JSON.parse(Buffer.from(jws.split('.')[0]!, 'base64url').toString())).toEqual({
        alg: 'EdDSA',
        typ: BATCH_TYPE,
        kid: 'gateway',
      })
      const r = await verifyAssertion(t, keys, expectFor(i))
      expect(r).toMatchObject({ ok: true, claims: { requestId: `req-${i}`, iss: 'gateway' } })
    }
    // One assertion of the batch for another request of the same batch: refused.
    expect(await verifyAssertion(tokens[0], keys, expectFor(1))).toEqual({ ok: false, reason: 'scope' })
  })

  it('checks the batch JWS once per batch, not once per assertion', async () => {
    const tokens = await batchOf(8)
    const keys = freshKeys()
    for (const [i, t] of tokens.entries())
      expect((await verifyAssertion(t, keys, expectFor(i))).ok).toBe(true)
    expect(keys.lookups).toBe(1)
  })

  it('checks it once when the assertions of a batch arrive together, before any check has finished', async () => {
    const tokens = await batchOf(8)
    const keys = freshKeys()
    const results = await Promise.all(tokens.map((t, i) => verifyAssertion(t, keys, expectFor(i))))
    expect(results.map((r) => r.ok)).toEqual(tokens.map(() => true))
    expect(keys.lookups).toBe(1)
    // A forged batch arriving together is refused for each of them, and not remembered.
    const forged = (await batchOf(4, new AssertionBatcher({ issuer: 'gateway', key: other.privateKey }))).map(
      (t, i) => verifyAssertion(t, keys, expectFor(i)),
    )
    expect((await Promise.all(forged)).map((r) => r.ok)).toEqual([false, false, false, false])
    expect(keys.lookups).toBe(2)
  })

  it('refuses claims swapped between assertions, altered proofs, another key, alg none and a lone JWS as a batch', async () => {
    const tokens = await batchOf(4)
    const keys = freshKeys()
    const [jws0, claims0, proof0] = partsOf(tokens[0]!)
    const [, claims1, proof1] = partsOf(tokens[1]!)
    const refused = async (token: string, i: number, reason = 'signature') =>
      expect(await verifyAssertion(token, keys, expectFor(i))).toEqual({ ok: false, reason })
    // Claims of request 1 with the proof of request 0, and the other way round.
    await refused(`${jws0}~${claims1}~${proof0}`, 1)
    await refused(`${jws0}~${claims0}~${proof1}`, 0)
    // A claim changed (another company) under the batch's JWS.
    const forgedClaims = b64(
      JSON.stringify({ ...JSON.parse(Buffer.from(claims0, 'base64url').toString()), companyId: 8 }),
    )
    await refused(`${jws0}~${forgedClaims}~${proof0}`, 0)
    // A flipped bit in the proof's path, its index or its size.
    for (const at of [2, 5, 40]) {
      const bytes = Buffer.from(proof0, 'base64url')
      bytes[at]! ^= 1
      await refused(`${jws0}~${claims0}~${bytes.toString('base64url')}`, 0)
    }
    // A batch signed with another key for a request's own claims.
    const [forged] = await signBatch([claims0], { issuer: 'gateway', key: other.privateKey })
    await refused(forged!, 0)
    // The batch's JWS with `alg: none`, or as HS256 keyed with the public key.
    const [, payload] = jws0.split('.')
    const none = `${b64(JSON.stringify({ alg: 'none', typ: BATCH_TYPE, kid: 'gateway' }))}.${payload}.`
    await refused(`${none}~${claims0}~${proof0}`, 0, 'algorithm')
    const hs = await new CompactSign(Buffer.from(payload!, 'base64url'))
      .setProtectedHeader({ alg: 'HS256', typ: BATCH_TYPE, kid: 'gateway' })
      .sign(pair.publicKey.export({ format: 'der', type: 'spki' }))
    await refused(`${hs}~${claims0}~${proof0}`, 0, 'algorithm')
    // One request's own assertion is no batch JWS (its type differs), even beside a proof of one leaf.
    const alone = await signAssertion(claimsFor(0), signer)
    const leafOnly = partsOf((await signBatch([alone.split('.')[1]!], signer))[0]!)[2]
    await refused(`${alone}~${alone.split('.')[1]}~${leafOnly}`, 0, 'malformed')
    // Malformed: a proof missing, or one part too many.
    await refused(`${jws0}~${claims0}`, 0, 'malformed')
    await refused(`${tokens[0]}~x`, 0, 'malformed')
  })

  it('refuses an expired batch assertion even when its batch was checked before', async () => {
    const [token] = await batchOf(1)
    const keys = freshKeys()
    expect((await verifyAssertion(token, keys, expectFor(0))).ok).toBe(true)
    expect(await verifyAssertion(token, keys, expectFor(0), Date.now() + 60_000)).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('a batch signed by another key is checked again, not taken from what the cache holds for this one', async () => {
    const tokens = await batchOf(2)
    const keys = freshKeys()
    expect((await verifyAssertion(tokens[0], keys, expectFor(0))).ok).toBe(true)
    const otherKeys = new Map([['gateway', other.publicKey]])
    expect(await verifyAssertion(tokens[1], otherKeys, expectFor(1))).toEqual({
      ok: false,
      reason: 'signature',
    })
  })
})

describe('AssertionBatcher', () => {
  it('signs what one turn of the event loop asks for with one JWS, at most MAX_BATCH at a time', async () => {
    const batcher = new AssertionBatcher(signer)
    const tokens = await batchOf(MAX_BATCH + 6, batcher)
    expect(new Set(tokens.map((t) => partsOf(t)[0])).size).toBe(2)
    const keys = freshKeys()
    for (const [i, t] of tokens.entries())
      expect((await verifyAssertion(t, keys, expectFor(i))).ok).toBe(true)
    // Asked in separate turns: a batch each.
    const a = await signAssertionInBatch(claimsFor(0), signer, batcher)
    const b = await signAssertionInBatch(claimsFor(1), signer, batcher)
    expect(partsOf(a)[0]).not.toBe(partsOf(b)[0])
  })

  it('fails every assertion of a batch it cannot sign', async () => {
    const broken = new AssertionBatcher({ issuer: 'gateway', key: other.publicKey })
    await expect(batchOf(3, broken)).rejects.toThrow()
  })
})
