import { createHash, sign, verify, type KeyObject } from 'node:crypto'
import type { AssertionKeys, AssertionSigner } from './assertion-keys'

/**
 * Assertions signed in batches: one Ed25519 signature for the assertions of the requests
 * the gateway forwards in one turn of its event loop. Each assertion's claims are a leaf of a Merkle
 * tree (RFC 9162 section 2.1: SHA-256, leaves and nodes hashed with distinct prefixes), the gateway
 * signs the tree's root, and each assertion carries its claims, its inclusion proof and the root's
 * signature: `v3.<claims>.<proof>.<signature>`. A service recomputes the root from the claims and the
 * proof and checks the signature with the issuer's public key, once per batch (verifiedRoot caches a
 * root whose signature it has checked). Nothing else changes: only the private key's holder can make
 * an assertion a service accepts, and each one is still bound to its request, single use and short-lived.
 */
export const BATCH_VERSION = 'v3'
/** What the signature covers: this prefix and the root, so that no v2 assertion's signature is also one of a root. */
const ROOT_DOMAIN = Buffer.from('clinic assertion batch v3\n')
/** Batches stay small enough to prove in a few hashes (a proof of 64 leaves is 6 hashes). */
export const MAX_BATCH = 64
const HASH_BYTES = 32

const sha256 = (...parts: Buffer[]) => {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest()
}
const LEAF = Buffer.from([0])
const NODE = Buffer.from([1])
/** The leaf of an assertion's claims (`v3.<claims>`, the base64url claims as sent). */
export const leafHash = (payload: string) => sha256(LEAF, Buffer.from(`${BATCH_VERSION}.${payload}`))
const nodeHash = (left: Buffer, right: Buffer) => sha256(NODE, left, right)
/** The largest power of two below n (n > 1): where RFC 9162 splits a tree of n leaves. */
const split = (n: number) => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** RFC 9162 MTH and PATH over `leaves`, each subtree hashed once. */
class Tree {
  private readonly memo = new Map<number, Buffer>()
  constructor(private readonly leaves: Buffer[]) {}

  hash(lo: number, hi: number): Buffer {
    if (hi - lo === 1) return this.leaves[lo]!
    const key = lo * (MAX_BATCH + 1) + hi
    let h = this.memo.get(key)
    if (!h) {
      const k = split(hi - lo)
      this.memo.set(key, (h = nodeHash(this.hash(lo, lo + k), this.hash(lo + k, hi))))
    }
    return h
  }

  path(m: number, lo = 0, hi = this.leaves.length): Buffer[] {
    if (hi - lo === 1) return []
    const k = split(hi - lo)
    return m < k
      ? [...this.path(m, lo, lo + k), this.hash(lo + k, hi)]
      : [...this.path(m - k, lo + k, hi), this.hash(lo, lo + k)]
  }
}

/** The root a leaf and its inclusion proof lead to (RFC 9162 section 2.1.3.2), or null when they cannot. */
export function rootOf(leaf: Buffer, index: number, size: number, path: readonly Buffer[]): Buffer | null {
  if (index >= size) return null
  let fn = index
  let sn = size - 1
  let r = leaf
  for (const p of path) {
    if (sn === 0) return null
    if (fn & 1 || fn === sn) {
      r = nodeHash(p, r)
      while (!(fn & 1) && fn !== 0) {
        fn >>= 1
        sn >>= 1
      }
    } else r = nodeHash(r, p)
    fn >>= 1
    sn >>= 1
  }
  return sn === 0 ? r : null
}

/** The proof as it travels: base64url of the batch size and the leaf's index (2 bytes each), then the path. */
function encodeProof(size: number, index: number, path: Buffer[]): string {
  const head = Buffer.alloc(4)
  head.writeUInt16BE(size, 0)
  head.writeUInt16BE(index, 2)
  return Buffer.concat([head, ...path]).toString('base64url')
}

function decodeProof(text: string): { size: number; index: number; path: Buffer[] } | null {
  const bytes = Buffer.from(text, 'base64url')
  if (bytes.length < 4 || (bytes.length - 4) % HASH_BYTES !== 0 || bytes.toString('base64url') !== text)
    return null
  const size = bytes.readUInt16BE(0)
  const path: Buffer[] = []
  for (let at = 4; at < bytes.length; at += HASH_BYTES) path.push(bytes.subarray(at, at + HASH_BYTES))
  return size >= 1 && size <= MAX_BATCH ? { size, index: bytes.readUInt16BE(2), path } : null
}

/** The `proof.signature` tail of each of these claims' assertions: one signature for them all. */
export function signBatch(payloads: readonly string[], signer: AssertionSigner): string[] {
  if (payloads.length < 1 || payloads.length > MAX_BATCH)
    throw new Error(`a batch holds 1 to ${MAX_BATCH} assertions`)
  const tree = new Tree(payloads.map(leafHash))
  const root = tree.hash(0, payloads.length)
  const signature = sign(null, Buffer.concat([ROOT_DOMAIN, root]), signer.key).toString('base64url')
  return payloads.map((_, i) => `${encodeProof(payloads.length, i, tree.path(i))}.${signature}`)
}

/** Roots whose signature a service has checked, per key set, until the assertions they prove expire. */
const checkedRoots = new WeakMap<AssertionKeys, Map<string, number>>()
const MAX_CHECKED = 10_000

/**
 * Whether `proof` and `signature` prove `payload` under the issuer's `key`: the root they lead to
 * signed by it. A root already checked (another assertion of the same batch) costs no signature check.
 */
export function provenByBatch(
  payload: string,
  proofText: string,
  signature: string,
  o: { keys: AssertionKeys; issuer: string; key: KeyObject; until: number },
  now: number,
): boolean {
  const proof = decodeProof(proofText)
  if (!proof) return false
  const root = rootOf(leafHash(payload), proof.index, proof.size, proof.path)
  const given = Buffer.from(signature, 'base64url')
  if (!root || given.length !== 64 || given.toString('base64url') !== signature) return false
  let checked = checkedRoots.get(o.keys)
  if (!checked) checkedRoots.set(o.keys, (checked = new Map()))
  const id = `${o.issuer}.${root.toString('base64url')}.${signature}`
  if ((checked.get(id) ?? 0) > now) return true
  if (!verify(null, Buffer.concat([ROOT_DOMAIN, root]), o.key, given)) return false
  if (checked.size >= MAX_CHECKED)
    for (const [k, until] of checked) if (until <= now || checked.size >= MAX_CHECKED) checked.delete(k)
  checked.set(id, o.until)
  return true
}

/**
 * Gathers the assertions asked for in one turn of the event loop (at most MAX_BATCH) and signs them
 * together when the turn ends (setImmediate): under load the requests a turn reads share one signature,
 * alone a request gets a batch of one.
 */
export class AssertionBatcher {
  private pending: Array<{ payload: string; resolve: (tail: string) => void; reject: (err: Error) => void }> =
    []

  constructor(private readonly signer: AssertionSigner) {}

  /** `v3.<payload>.<proof>.<signature>` for these claims (base64url JSON, as assertion.ts makes them). */
  sign(payload: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const n = this.pending.push({ payload, resolve, reject })
      if (n === 1) setImmediate(() => this.flush())
      else if (n === MAX_BATCH) this.flush()
    })
  }

  private flush() {
    const batch = this.pending.splice(0, MAX_BATCH)
    if (!batch.length) return
    try {
      const tails = signBatch(
        batch.map((b) => b.payload),
        this.signer,
      )
      batch.forEach((b, i) => b.resolve(`${BATCH_VERSION}.${b.payload}.${tails[i]}`))
    } catch (err) {
      for (const b of batch) b.reject(err as Error)
    }
  }
}
