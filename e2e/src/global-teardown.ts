import { readFileSync, rmSync } from 'node:fs'
import { stopStack, type StackInfo } from './stack'

export default async function teardown() {
  const file = process.env.E2E_STACK_FILE
  if (!file) return
  const info = JSON.parse(readFileSync(file, 'utf8')) as StackInfo
  rmSync(file, { force: true })
  await stopStack(info)
}
