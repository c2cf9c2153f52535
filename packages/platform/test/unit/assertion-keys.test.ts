import { generateKeyPairSync } from 'node:crypto'
import { ConfigError, assertionKeysOf, requireServiceSigner } from '@clinic/platform'

const der = (k: { export(o: object): Buffer | string }, type: 'spki' | 'pkcs8') =>
  (k.export({ format: 'der', type }) as Buffer).toString('base64url')
const pair = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  return { privateKey: der(privateKey, 'pkcs8'), publicKey: der(publicKey, 'spki') }
}
const errorOf = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    return err as Error
  }
  throw new Error('did not throw')
}

describe('assertion keys from the configuration', () => {
  const gateway = pair()
  const comms = pair()

  it("reads the gateway's public key, the callers' keys and the service's own signing key", () => {
    const { assertionKeys, serviceSigner } = assertionKeysOf('appointments', {
      GATEWAY_VERIFY_KEY: gateway.publicKey,
      SERVICE_VERIFY_KEYS: [`comms=${comms.publicKey}`],
      SERVICE_SIGNING_KEY: pair().privateKey,
    })
    expect([...assertionKeys.keys()].sort()).toEqual(['comms', 'gateway'])
    expect(serviceSigner?.issuer).toBe('appointments')
    expect(serviceSigner?.key.type).toBe('private')
  })

  it('refuses, in one line naming the variable, a missing or wrong key', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /GATEWAY_VERIFY_KEY is required/],
      // The private key where the public one goes (an easy mix-up): refused, not half-working.
      [{ GATEWAY_VERIFY_KEY: gateway.privateKey }, /GATEWAY_VERIFY_KEY must be an Ed25519 public key/],
      [{ GATEWAY_VERIFY_KEY: 'change-me-gateway-verify-key' }, /GATEWAY_VERIFY_KEY must be an Ed25519/],
      [
        { GATEWAY_VERIFY_KEY: gateway.publicKey, SERVICE_SIGNING_KEY: comms.publicKey },
        /SERVICE_SIGNING_KEY must be an Ed25519 private key/,
      ],
      [
        { GATEWAY_VERIFY_KEY: gateway.publicKey, SERVICE_VERIFY_KEYS: [`gateway=${comms.publicKey}`] },
        /SERVICE_VERIFY_KEYS must be <service>=<public key>/,
      ],
      [
        { GATEWAY_VERIFY_KEY: gateway.publicKey, SERVICE_VERIFY_KEYS: [comms.publicKey] },
        /SERVICE_VERIFY_KEYS must be <service>=<public key>/,
      ],
    ]
    for (const [config, message] of cases) {
      const err = errorOf(() => assertionKeysOf('patients', config as never))
      expect(err).toBeInstanceOf(ConfigError)
      expect(err.message).toMatch(message)
      expect(err.message).not.toContain('\n')
    }
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey
    expect(
      errorOf(() => assertionKeysOf('x', { GATEWAY_VERIFY_KEY: der(rsa, 'spki') } as never)).message,
    ).toMatch(/must be an Ed25519 public key/)
  })

  it('a service that calls others does not start without its own key', () => {
    const err = errorOf(() => requireServiceSigner({ serviceSigner: null }, 'patients'))
    expect(err).toBeInstanceOf(ConfigError)
    expect(err.message).toBe(
      'Invalid configuration: SERVICE_SIGNING_KEY is required (this service calls patients)',
    )
  })
})
