import { createHmac, timingSafeEqual } from 'node:crypto'
import { canonicalJson } from './canonical-json'

/**
 * Event signatures (DESIGN.md section 5): every CloudEvent a service emits carries the
 * extension `signature` = `v1.` + base64url HMAC-SHA256, keyed with EVENT_SIGNING_SECRET, over the
 * canonical JSON (sorted keys) of the event without `signature`. Over parsed values, not bytes, so
 * the signature survives the outbox's jsonb (which reorders keys) and any re-serialisation.
 * Consumers that record what events claim (audit) refuse unsigned and badly signed events.
 */
export const SIGNATURE_ATTRIBUTE = 'signature'
const VERSION = 'v1.'

function mac(event: Record<string, unknown>, secret: string): Buffer {
  const { [SIGNATURE_ATTRIBUTE]: _ignored, ...rest } = event
  return createHmac('sha256', secret).update(canonicalJson(rest)).digest()
}

/** The event with its `signature` (a copy; any previous signature is replaced). */
export function signEvent<E extends object>(event: E, secret: string): E & { signature: string } {
  const sig = VERSION + mac(event as Record<string, unknown>, secret).toString('base64url')
  return { ...event, [SIGNATURE_ATTRIBUTE]: sig } as E & { signature: string }
}

export type SignatureCheck = 'ok' | 'unsigned' | 'bad_signature'

/**
 * The keys a consumer checks events with: one for every source, or one per source
 * (`clinic/patients` -> patients' key), so that a service can only sign as itself. An event of a
 * source without a key is badly signed.
 */
export type EventKeys = string | Readonly<Record<string, string>>

/**
 * Parses `EVENT_VERIFY_KEYS` entries, `<service>=<key>` (the service's EVENT_SIGNING_SECRET), into
 * keys by event source (`clinic/<service>`).
 */
export function eventKeysBySource(entries: readonly string[]): Record<string, string> {
  const keys: Record<string, string> = {}
  for (const entry of entries) {
    const at = entry.indexOf('=')
    const service = entry.slice(0, at)
    const key = entry.slice(at + 1)
    if (at < 1 || !/^[a-z][a-z0-9-]*$/.test(service) || key.length < 32)
      throw new Error('EVENT_VERIFY_KEYS entries are <service>=<key of 32+ characters>')
    keys[`clinic/${service}`] = key
  }
  return keys
}

/** Checks a received event's signature in constant time, with the key of its source. */
export function checkEventSignature(received: object, keys: EventKeys): SignatureCheck {
  const event = received as Record<string, unknown>
  const given = event[SIGNATURE_ATTRIBUTE]
  if (given === undefined) return 'unsigned'
  if (typeof given !== 'string' || !given.startsWith(VERSION)) return 'bad_signature'
  const secret = typeof keys === 'string' ? keys : keys[String(event.source)]
  if (secret === undefined) return 'bad_signature'
  const expected = mac(event, secret)
  const got = Buffer.from(given.slice(VERSION.length), 'base64url')
  return got.length === expected.length && timingSafeEqual(got, expected) ? 'ok' : 'bad_signature'
}

let processKey: string | null = null

/**
 * The key this process signs its events with (`connectService` sets it from EVENT_SIGNING_SECRET).
 * Process-wide because events are written to the outbox from many places (repositories, the
 * gateway's access log) through `enqueueEvents`, which takes no key.
 */
export function useEventSigningKey(secret: string | null): void {
  if (secret !== null && secret.length < 32) throw new Error('EVENT_SIGNING_SECRET must be 32+ characters')
  processKey = secret
}

/** Signs with the process key; unchanged when none is set (tests that exercise no consumer). */
export function signWithProcessKey<E extends object>(event: E): E {
  return processKey === null ? event : signEvent(event, processKey)
}
