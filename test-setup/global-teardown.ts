import { dropTestDatabase, deleteTestVhost } from '../packages/platform/src/testing'

export default async function globalTeardown() {
  if (process.env.KEEP_TEST_DB) return
  await Promise.all([
    process.env.DATABASE_URL && dropTestDatabase(process.env.DATABASE_URL),
    process.env.AMQP_URL && deleteTestVhost(process.env.AMQP_URL),
  ])
}
