import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startStack } from './stack'

/** One stack for all e2e files; each file makes its own companies, so files never collide. */
export default async function setup() {
  const info = await startStack()
  const file = path.join(tmpdir(), `clinic-e2e-${process.pid}.json`)
  writeFileSync(file, JSON.stringify(info))
  process.env.E2E_STACK_FILE = file
}
