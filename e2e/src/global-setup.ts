import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { removeContainers, shareInfrastructure, startInfrastructure } from './infrastructure'
import { startStack } from './stack'

/**
 * One stack for all e2e files; each file makes its own companies, so files never collide. Its
 * PostgreSQL and RabbitMQ (containers when a Docker engine answers) serve the stacks some suites
 * start beside it too; the global stack owns the containers and the teardown removes them with it.
 */
export default async function setup() {
  const infra = await startInfrastructure()
  shareInfrastructure(infra)
  try {
    const info = await startStack()
    info.cleanup.containers = infra.containers
    const file = path.join(tmpdir(), `clinic-e2e-${process.pid}.json`)
    writeFileSync(file, JSON.stringify(info))
    process.env.E2E_STACK_FILE = file
  } catch (err) {
    // Jest runs no teardown after a failed setup.
    await removeContainers(infra.containers)
    throw err
  }
}
