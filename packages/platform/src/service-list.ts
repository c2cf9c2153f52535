import { readFileSync } from 'node:fs'
import path from 'node:path'

/** An entry of packages/platform/services.json, the one list of services. */
export interface ServiceEntry {
  name: string
  port: number
  /** The API path families it answers, each with what the audit trail calls its resources. */
  families: Record<string, string>
  webhooks?: string[]
  /** Path prefixes of pages for people outside the API bases (`/p/`): GET and POST, no API token. */
  pages?: string[]
  /** Request body limits in bytes, by service path, where a route needs more than the 64 KiB default. */
  body_limits?: Record<string, number>
}

let list: { services: ServiceEntry[] } | undefined
/** services.json, read once at run time: the file sits beside src/ and dist/, outside the compiled project. */
export const serviceList = (): { services: ServiceEntry[] } =>
  (list ??= JSON.parse(readFileSync(path.resolve(__dirname, '../services.json'), 'utf8')))
