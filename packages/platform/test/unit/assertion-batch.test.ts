import crypto, { generateKeyPairSync, sign } from 'node:crypto'
import {
  AssertionBatcher,
  MAX_BATCH,
  signAssertion,
  signAssertionInBatch,
  verifyAssertion,
  type AssertionClaims,
} from '@clinic/platform'
import { leafHash, rootOf, signBatch } from '../../src/assertion-batch'
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
/** A key set of its own per test: checked roots are remembered per key set. */
const freshKeys = () => new Map([['gateway', pair.publicKey]])

/** n assertions signed together, as the gateway's batcher does in one turn of its event loop. */
async function batchOf(n: number, batcher = new AssertionBatcher(signer)) {
  return Promise.all(Array.from({ length: n }, (_, i) => signAssertionInBatch(claimsFor(i), signer, batcher)))
}

describe('Merkle inclusion proofs (RFC 9162)', () => {
  it('every leaf of every batch size proves the signed root, and no other leaf does', () => {
    for (const size of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, MAX_BATCH]) {
      const payloads = Array.from({ length: size }, (_, i) => `payload-${size}-${i}`)
      const tails = signBatch(payloads, signer)
      expect(new Set(tails.map((t) => t.split('.')[1])).size).toBe(1) // one signature
      const roots = tails.map((tail, i) => {
        const proof = Buffer.from(tail.split('.')[0]!, 'base64url')
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
        // (The size is not signed, only the root: a path that also fits another size proves the same tree.)
        expect(rootOf(leafHash(payloads[i]!), size, size, path)).toBeNull()
        expect(rootOf(leafHash(payloads[i]!), i, size, [...path, path[0] ?? Buffer.alloc(32)])).toBeNull()
        return root.toString('hex')
      })
      expect(new Set(roots).size).toBe(1)
    }
  })
})

describe('assertions signed in batches (v3)', () => {
  it('verify as a v2 assertion does, each bound to its own request', async () => {
    const tokens = await batchOf(5)
    const keys = freshKeys()
    tokens.forEach((t, i) => {
      expect(t.startsWith('v3.')).toBe(true)
      const r = verifyAssertion(t, keys, expectFor(i))
      expect(r).toMatchObject({ ok: true, claims: { requestId: `req-${i}`, iss: 'gateway' } })
    })
    // One assertion of the batch for another request of the same batch: refused.
    expect(verifyAssertion(tokens[0], keys, expectFor(1))).toEqual({ ok: false, reason: 'scope' })
  })

  it('checks the batch signature once per batch, not once per assertion', async () => {
    const tokens = await batchOf(8)
    const keys = freshKeys()
    const verify = jest.spyOn(crypto, 'verify')
    try {
      tokens.forEach((t, i) => expect(verifyAssertion(t, keys, expectFor(i)).ok).toBe(true))
      expect(verify).toHaveBeenCalledTimes(1)
    } finally {
      verify.mockRestore()
    }
  })

  it('refuses claims swapped between assertions, altered proofs, another key and a v2 signature as a root', async () => {
    const tokens = await batchOf(4)
    const keys = freshKeys()
    const parts = tokens.map((t) => t.split('.'))
    const [, payload0, proof0, sig0] = parts[0]!
    const [, payload1, proof1] = parts[1]!
    const refused = (token: string, i: number) =>
      expect(verifyAssertion(token, keys, expectFor(i))).toEqual({ ok: false, reason: 'signature' })
    // Claims of request 1 with the proof of request 0, and the other way round.
    refused(`v3.${payload1}.${proof0}.${sig0}`, 1)
    refused(`v3.${payload0}.${proof1}.${sig0}`, 0)
    // A flipped bit in the proof's path, its index or its size.
    for (const at of [2, 5, 40]) {
      const bytes = Buffer.from(proof0!, 'base64url')
      bytes[at]! ^= 1
      refused(`v3.${payload0}.${bytes.toString('base64url')}.${sig0}`, 0)
    }
    // A batch signed with another key, and a request's own claims with a forged one-leaf batch.
    const forged = signBatch([payload0!], { issuer: 'gateway', key: other.privateKey })[0]!
    refused(`v3.${payload0}.${forged}`, 0)
    // A v2 assertion's signature over its data is no signature of a root.
    const v2 = signAssertion(claimsFor(0), signer).split('.')
    const leafOnly = signBatch([v2[1]!], signer)[0]!.split('.')[0]
    refused(`v3.${v2[1]}.${leafOnly}.${v2[2]}`, 0)
    // Malformed: a proof without its signature, or one part too many.
    expect(verifyAssertion(`v3.${payload0}.${proof0}`, keys, expectFor(0))).toEqual({
      ok: false,
      reason: 'malformed',
    })
    expect(verifyAssertion(`${tokens[0]}.x`, keys, expectFor(0))).toEqual({ ok: false, reason: 'malformed' })
  })

  it('refuses an expired batch assertion even when its root was checked before', async () => {
    const [token] = await batchOf(1)
    const keys = freshKeys()
    expect(verifyAssertion(token, keys, expectFor(0)).ok).toBe(true)
    expect(verifyAssertion(token, keys, expectFor(0), Date.now() + 60_000)).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('a root signed by another key is checked again, not taken from what the cache holds for this one', async () => {
    const tokens = await batchOf(2)
    const keys = freshKeys()
    expect(verifyAssertion(tokens[0], keys, expectFor(0)).ok).toBe(true)
    const otherKeys = new Map([['gateway', other.publicKey]])
    expect(verifyAssertion(tokens[1], otherKeys, expectFor(1))).toEqual({ ok: false, reason: 'signature' })
  })
})

describe('AssertionBatcher', () => {
  it('signs what one turn of the event loop asks for with one signature, at most MAX_BATCH at a time', async () => {
    const spy = jest.spyOn(crypto, 'sign')
    try {
      const batcher = new AssertionBatcher(signer)
      const tokens = await batchOf(MAX_BATCH + 6, batcher)
      expect(spy).toHaveBeenCalledTimes(2)
      expect(new Set(tokens.map((t) => t.split('.')[3])).size).toBe(2)
      const keys = freshKeys()
      tokens.forEach((t, i) => expect(verifyAssertion(t, keys, expectFor(i)).ok).toBe(true))
      // Asked in separate turns: a batch each.
      spy.mockClear()
      await signAssertionInBatch(claimsFor(0), signer, batcher)
      await signAssertionInBatch(claimsFor(1), signer, batcher)
      expect(spy).toHaveBeenCalledTimes(2)
    } finally {
      spy.mockRestore()
    }
  })

  it('fails every assertion of a batch it cannot sign', async () => {
    const broken = new AssertionBatcher({ issuer: 'gateway', key: other.publicKey })
    await expect(batchOf(3, broken)).rejects.toThrow()
  })
})

// A v2 assertion made by hand with this test's key still verifies (services' own calls stay v2).
it('keeps v2 assertions valid', () => {
  const token = signAssertion(claimsFor(3), signer)
  expect(verifyAssertion(token, freshKeys(), expectFor(3)).ok).toBe(true)
  expect(sign).toBeDefined()
})
