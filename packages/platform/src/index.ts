// The whole platform, for server.ts, app.ts and tests. Narrower entry points: `/core` (the only one
// domain/ may import: framework-free), `/http`, `/db`, `/events`, `/testing`.
export * from './entry/core'
export * from './entry/http'
export * from './entry/db'
export * from './entry/events'
export * from './config'
export * from './logging'
export * from './service'
export { readVersion } from './version'
export * from './cli'
export * from './job-runner'
export * from './listener'
export * from './group-commit'
