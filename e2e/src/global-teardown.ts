import { readFileSync, rmSync } from 'node:fs'
import { removeContainers } from './infrastructure'
import { stopStack, type StackInfo } from './stack'

export default async function teardown() {
  const file = process.env.E2E_STACK_FILE
  if (!file) return
  const info = JSON.parse(readFileSync(file, 'utf8')) as StackInfo
  rmSync(file, { force: true })
  try {
    await stopStack(info)
  } finally {
    // The run's containers go whatever happened before (no reaper removes them otherwise).
    await removeContainers(info.cleanup.containers ?? [])
  }
}
