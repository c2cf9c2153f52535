import { createTestDatabase, createTestVhost } from '../packages/platform/src/testing'
import { apps } from '../packages/platform/naming.cjs'
import { assertionKeyPair } from '../scripts/service-env.cjs'

/** The run's assertion keys (Ed25519), as a deployment holds them, and each service's own pair. */
function assertionKeys(root: string) {
  const gateway = assertionKeyPair(root, 'gateway')
  process.env.GATEWAY_SIGNING_KEY = gateway.privateKey
  process.env.GATEWAY_VERIFY_KEY = gateway.publicKey
  for (const { name } of apps) {
    const pair = assertionKeyPair(root, name)
    const prefix = name.toUpperCase().replace(/-/g, '_')
    process.env[`${prefix}_SERVICE_SIGNING_KEY`] = pair.privateKey
    process.env[`${prefix}_SERVICE_VERIFY_KEY`] = pair.publicKey
  }
}

/**
 * One database and one vhost for the run; every test scopes its rows by a fresh company id, so
 * parallel files never see each other's data. Services migrate their own schema on first use.
 */
export default async function globalSetup() {
  process.env.DATABASE_URL = await createTestDatabase()
  process.env.AMQP_URL = await createTestVhost()
  assertionKeys('test-assertion-root-0123456789abcdef0123456789')
  process.env.AUDIT_CHAIN_KEY = 'test-audit-chain-key-0123456789abcdef012345'
  process.env.LOG_LEVEL = process.env.LOG_LEVEL ?? 'silent'
}
