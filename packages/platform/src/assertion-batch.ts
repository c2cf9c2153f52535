import { hash } from 'node:crypto'
import { CompactSign, compactVerify, decodeProtectedHeader, errors } from 'jose'
import type { AssertionKeys, AssertionSigner } from './assertion-keys'

/**
 * Assertions signed in batches: one signature for the assertions of the requests the gateway
 * forwards in one turn of its event loop. Each assertion's claims are a leaf of a Merkle tree
 * (RFC 9162 section 2.1: SHA-256, leaves and nodes hashed with distinct prefixes); the batch is a
 * JWS (RFC 7515, EdDSA per RFC 8037, made and checked with `jose`, `typ` BATCH_TYPE) whose payload
 * is `{"iss", "root", "size"}`, and each request's assertion is that JWS with its own claims and
 * inclusion proof beside it: `<batch JWS>~<claims>~<proof>` (base64url, as SD-JWT puts disclosures
 * beside its JWS). A service recomputes the root from the claims and the proof, and checks the JWS
 * with the issuer's public key once per batch (a JWS already checked is remembered until its
 * assertions expire). Nothing else changes: only the private key's holder can make an assertion a
 * service accepts, and each one is still bound to its request, single use and short-lived.
 */
export const BATCH_TYPE = 'clinic-assertion-batch+jws'
export const BATCH_SEPARATOR = '~'
/** Batches stay small enough to prove in a few hashes (a proof of 64 leaves is 6 hashes). */
export const MAX_BATCH = 64
const HASH_BYTES = 32

// One-shot hashes (crypto.hash): a tree of n leaves takes 2n - 1 of them, and a Hash object each
// cost about as much again as the hashing.
const NODE = Buffer.from([1])
/** The leaf of an assertion's claims (the base64url claims as sent, ASCII: a byte a character). */
export const leafHash = (claims: string): Buffer => hash('sha256', `\u0000${claims}`, 'buffer')
const nodeHash = (left: Buffer, right: Buffer): Buffer =>
  hash('sha256', Buffer.concat([NODE, left, right], 1 + 2 * HASH_BYTES), 'buffer')
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

  /** The siblings from leaf `m` up to the root (RFC 9162 PATH), found from the root down. */
  path(m: number): Buffer[] {
    const siblings: Buffer[] = []
    let lo = 0
    let hi = this.leaves.length
    while (hi - lo > 1) {
      const k = split(hi - lo)
      if (m < k) {
        siblings.push(this.hash(lo + k, hi))
        hi = lo + k
      } else {
        siblings.push(this.hash(lo, lo + k))
        m -= k
        lo += k
      }
    }
    return siblings.reverse()
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

/** What an assertion's check found: its claims (JSON) and the issuer whose key signed, or why not. */
export type Checked = { json: string; issuer: string } | { reason: string }

/** Why jose refused a JWS, in the reasons of verifyAssertion. */
function joseReason(err: unknown): string {
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'signature'
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return 'algorithm'
  return 'malformed'
}

/**
 * The payload (JSON text) of a compact JWS of this `typ`, signed with EdDSA by the key of the issuer
 * its header names; otherwise why not. jose checks the serialization, the algorithm and the signature.
 */
export async function verifiedJws(jws: string, typ: string, keys: AssertionKeys): Promise<Checked> {
  let header: ReturnType<typeof decodeProtectedHeader>
  try {
    header = decodeProtectedHeader(jws)
  } catch {
    return { reason: 'malformed' }
  }
  if (header.typ !== typ || typeof header.kid !== 'string') return { reason: 'malformed' }
  const key = keys.get(header.kid)
  if (!key) return { reason: 'issuer' }
  try {
    const { payload } = await compactVerify(jws, key, { algorithms: ['EdDSA'] })
    return { json: Buffer.from(payload).toString('utf8'), issuer: header.kid }
  } catch (err) {
    return { reason: joseReason(err) }
  }
}

/** The assertion of each of these claims (base64url JSON), under one batch JWS. */
export async function signBatch(claims: readonly string[], signer: AssertionSigner): Promise<string[]> {
  if (claims.length < 1 || claims.length > MAX_BATCH)
    throw new Error(`a batch holds 1 to ${MAX_BATCH} assertions`)
  const tree = new Tree(claims.map(leafHash))
  const root = tree.hash(0, claims.length).toString('base64url')
  const jws = await new CompactSign(
    Buffer.from(JSON.stringify({ iss: signer.issuer, root, size: claims.length })),
  )
    .setProtectedHeader({ alg: 'EdDSA', typ: BATCH_TYPE, kid: signer.issuer })
    .sign(signer.key)
  return claims.map((c, i) => [jws, c, encodeProof(claims.length, i, tree.path(i))].join(BATCH_SEPARATOR))
}

interface CheckedBatch {
  issuer: string
  root: string
  size: number
  /** Until when the check is remembered. */
  until: number
}
/** Longer than an assertion lives (10 s, and 5 s of clock skew): its batch's other assertions come within it. */
const REMEMBER_MS = 20_000
/**
 * Batch JWSs a service has checked, per key set, until the assertions they prove expire; and those
 * being checked, so that the assertions of one batch arriving together wait for one check (jose
 * checks asynchronously) instead of each checking the same signature.
 */
const batchChecks = new WeakMap<
  AssertionKeys,
  { checked: Map<string, CheckedBatch>; checking: Map<string, Promise<CheckedBatch | { reason: string }>> }
>()
const MAX_CHECKED = 10_000

/** The batch JWS's signature and payload checked with jose, once: then remembered. */
async function checkedBatch(jws: string, keys: AssertionKeys): Promise<CheckedBatch | { reason: string }> {
  const verified = await verifiedJws(jws, BATCH_TYPE, keys)
  if ('reason' in verified) return verified
  let batch: { iss?: unknown; root?: unknown; size?: unknown }
  try {
    batch = JSON.parse(verified.json) as typeof batch
  } catch {
    return { reason: 'malformed' }
  }
  if (
    !batch ||
    batch.iss !== verified.issuer ||
    typeof batch.root !== 'string' ||
    typeof batch.size !== 'number'
  )
    return { reason: 'malformed' }
  return { issuer: verified.issuer, root: batch.root, size: batch.size, until: 0 }
}

/**
 * The claims of a batch's assertion (`<batch JWS>~<claims>~<proof>`) when the proof leads from them
 * to the root the batch JWS signs; otherwise why not. A batch already checked (another assertion of
 * it) costs no signature check.
 */
export function provenByBatch(token: string, keys: AssertionKeys, now: number): Checked | Promise<Checked> {
  const [jws, claims, proofText, extra] = token.split(BATCH_SEPARATOR)
  if (!jws || !claims || !proofText || extra !== undefined) return { reason: 'malformed' }
  const proof = decodeProof(proofText)
  if (!proof) return { reason: 'malformed' }
  const root = rootOf(leafHash(claims), proof.index, proof.size, proof.path)
  if (!root) return { reason: 'signature' }
  let checks = batchChecks.get(keys)
  if (!checks) batchChecks.set(keys, (checks = { checked: new Map(), checking: new Map() }))
  const { checked, checking } = checks
  const proven = (batch: CheckedBatch): Checked =>
    batch.size !== proof.size || batch.root !== root.toString('base64url')
      ? { reason: 'signature' }
      : { json: Buffer.from(claims, 'base64url').toString('utf8'), issuer: batch.issuer }
  // Another assertion of a batch already checked: answered at once, without a promise.
  const known = checked.get(jws)
  if (known && known.until > now) return proven(known)
  let check = checking.get(jws)
  if (!check) {
    check = checkedBatch(jws, keys).then((batch) => {
      checking.delete(jws)
      if ('reason' in batch) return batch
      if (checked.size >= MAX_CHECKED)
        for (const [k, b] of checked) if (b.until <= now || checked.size >= MAX_CHECKED) checked.delete(k)
      batch.until = now + REMEMBER_MS
      checked.set(jws, batch)
      return batch
    })
    checking.set(jws, check)
  }
  return check.then((batch) => ('reason' in batch ? batch : proven(batch)))
}

/**
 * Gathers the assertions asked for in one turn of the event loop (at most MAX_BATCH) and signs them
 * together when the turn ends (setImmediate): under load the requests a turn reads share one signature,
 * alone a request gets a batch of one.
 */
export class AssertionBatcher {
  private pending: Array<{ claims: string; resolve: (token: string) => void; reject: (err: Error) => void }> =
    []

  constructor(private readonly signer: AssertionSigner) {}

  /** `<batch JWS>~<claims>~<proof>` for these claims (base64url JSON, as assertion.ts makes them). */
  sign(claims: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const n = this.pending.push({ claims, resolve, reject })
      if (n === 1) setImmediate(() => this.flush())
      else if (n === MAX_BATCH) this.flush()
    })
  }

  private flush() {
    const batch = this.pending.splice(0, MAX_BATCH)
    if (!batch.length) return
    signBatch(
      batch.map((b) => b.claims),
      this.signer,
    ).then(
      (tokens) => batch.forEach((b, i) => b.resolve(tokens[i]!)),
      (err: Error) => batch.forEach((b) => b.reject(err)),
    )
  }
}
