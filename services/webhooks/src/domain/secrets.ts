import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** `whsec_` + base64 of 32 random bytes (DESIGN.md section 10): the form Standard Webhooks libraries take. */
export const SECRET_PREFIX = 'whsec_'
export const newSecret = (): string => SECRET_PREFIX + randomBytes(32).toString('base64')

/**
 * The `webhook-signature` header of the Standard Webhooks specification, made by its reference
 * library (`standardwebhooks`): `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each secret
 * (the current one and, while a rotation overlaps, the previous one), space-separated.
 */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  const at = new Date(timestamp * 1000)
  return secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' ')
}

const IV_BYTES = 12
const TAG_BYTES = 16

/**
 * Seals endpoint secrets at rest with AES-256-GCM under a key derived from WEBHOOKS_SECRET_KEY:
 * the database holds `iv | tag | ciphertext`, useless without the key. The endpoint id is the
 * additional data, so a sealed secret copied onto another endpoint does not open.
 */
export class SecretBox {
  private readonly key: Buffer

  constructor(masterKey: string) {
    this.key = Buffer.from(hkdfSync('sha256', masterKey, 'clinic-webhooks', 'endpoint secrets', 32))
  }

  seal(secret: string, endpointId: string): Buffer {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(endpointId))
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body])
  }

  open(sealed: Buffer, endpointId: string): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, IV_BYTES))
    decipher.setAAD(Buffer.from(endpointId))
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    )
  }
}
