import { createTestDatabase, createTestVhost } from '../packages/platform/src/testing'

/**
 * One database and one vhost for the run; every test scopes its rows by a fresh company id, so
 * parallel files never see each other's data. Services migrate their own schema on first use.
 */
export default async function globalSetup() {
  process.env.DATABASE_URL = await createTestDatabase()
  process.env.AMQP_URL = await createTestVhost()
  process.env.INTERNAL_AUTH_SECRET = 'test-secret-0123456789abcdef0123456789abcdef'
  process.env.EVENT_SIGNING_SECRET = 'test-event-signing-0123456789abcdef0123456789'
  process.env.AUDIT_CHAIN_KEY = 'test-audit-chain-key-0123456789abcdef012345'
  process.env.LOG_LEVEL = process.env.LOG_LEVEL ?? 'silent'
}
