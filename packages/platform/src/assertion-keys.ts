import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { ConfigError } from './config'

/**
 * Keys of the assertions (assertion.ts): Ed25519. The gateway alone holds GATEWAY_SIGNING_KEY;
 * every service holds its public half (GATEWAY_VERIFY_KEY), so a service, or whoever owns its
 * environment, can check what the gateway signed but cannot sign it. A service that calls others
 * signs with a key of its own (SERVICE_SIGNING_KEY), which the callee accepts only on the internal
 * routes that name it as a caller (SERVICE_VERIFY_KEYS). Keys travel as base64url of their DER
 * (PKCS#8 private, SPKI public): one line each, no `=`, so `name=key` lists stay unambiguous.
 */

/** Who signs an assertion: `gateway` or a service's name, with its private key. */
export interface AssertionSigner {
  issuer: string
  key: KeyObject
}

/** The public keys a service checks assertions with, by issuer (`gateway`, callers by name). */
export type AssertionKeys = ReadonlyMap<string, KeyObject>

export const GATEWAY_ISSUER = 'gateway'

const der = (text: string, what: string) => {
  const bytes = Buffer.from(text.trim(), 'base64')
  if (!bytes.length) throw new Error(`${what} is empty`)
  return bytes
}

/** A private Ed25519 key from base64(url) PKCS#8 DER; throws a one-line reason otherwise. */
export function parsePrivateKey(text: string, what = 'the key'): KeyObject {
  let key: KeyObject
  try {
    key = createPrivateKey({ key: der(text, what), format: 'der', type: 'pkcs8' })
  } catch {
    throw new Error(`${what} must be an Ed25519 private key (base64 PKCS#8 DER)`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${what} must be an Ed25519 private key`)
  return key
}

/** A public Ed25519 key from base64(url) SPKI DER; throws a one-line reason otherwise. */
export function parsePublicKey(text: string, what = 'the key'): KeyObject {
  let key: KeyObject
  try {
    key = createPublicKey({ key: der(text, what), format: 'der', type: 'spki' })
  } catch {
    throw new Error(`${what} must be an Ed25519 public key (base64 SPKI DER)`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${what} must be an Ed25519 public key`)
  return key
}

/** `name=<public key>,...` (SERVICE_VERIFY_KEYS) as a map; `gateway` is not a service name here. */
export function parseVerifyKeys(entries: readonly string[], what = 'SERVICE_VERIFY_KEYS') {
  const keys = new Map<string, KeyObject>()
  for (const entry of entries) {
    const at = entry.indexOf('=')
    const name = entry.slice(0, at).trim()
    if (at <= 0 || name === GATEWAY_ISSUER || keys.has(name))
      throw new Error(`${what} must be <service>=<public key>,... with each service once`)
    keys.set(name, parsePublicKey(entry.slice(at + 1), `${what} (${name})`))
  }
  return keys
}

/**
 * The keys of a service's assertions from its configuration: the gateway's public key and its
 * callers' (what it accepts), and its own signing key (what it calls others with). A key that does
 * not parse is a ConfigError naming the variable.
 */
export function assertionKeysOf(
  service: string,
  config: {
    GATEWAY_VERIFY_KEY?: string
    SERVICE_SIGNING_KEY?: string
    SERVICE_VERIFY_KEYS?: readonly string[]
  },
): { assertionKeys: AssertionKeys; serviceSigner: AssertionSigner | null } {
  try {
    if (!config.GATEWAY_VERIFY_KEY) throw new Error('GATEWAY_VERIFY_KEY is required')
    const keys = parseVerifyKeys(config.SERVICE_VERIFY_KEYS ?? [])
    keys.set(GATEWAY_ISSUER, parsePublicKey(config.GATEWAY_VERIFY_KEY, 'GATEWAY_VERIFY_KEY'))
    const signing = config.SERVICE_SIGNING_KEY
    return {
      assertionKeys: keys,
      serviceSigner: signing
        ? { issuer: service, key: parsePrivateKey(signing, 'SERVICE_SIGNING_KEY') }
        : null,
    }
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${(err as Error).message}`)
  }
}

/** The signer of a service that calls others: without SERVICE_SIGNING_KEY it cannot start. */
export function requireServiceSigner(
  deps: { serviceSigner: AssertionSigner | null },
  calls: string,
): AssertionSigner {
  if (!deps.serviceSigner)
    throw new ConfigError(
      `Invalid configuration: SERVICE_SIGNING_KEY is required (this service calls ${calls})`,
    )
  return deps.serviceSigner
}
