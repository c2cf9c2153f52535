import type { InternalEndpoint } from './define'
import { internalApi } from './index'

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string')

/**
 * Each app's `calls` against the internal endpoints (internal-api/<callee>.ts): a callee declares
 * endpoints, at least one of them for that caller, and an endpoint's own callers all call it.
 */
export function callingProblems(apps: Array<Record<string, unknown>>): string[] {
  const problems: string[] = []
  const apis: Record<string, Record<string, InternalEndpoint>> = internalApi
  const callsOf = (name: string) => {
    const s = apps.find((a) => a.name === name)
    return s && strings(s.calls) ? s.calls : []
  }
  for (const s of apps)
    for (const callee of callsOf(String(s.name))) {
      const endpoints = Object.values(Object.hasOwn(apis, callee) ? apis[callee]! : {})
      if (!endpoints.some((e) => !e.callers || e.callers.includes(String(s.name))))
        problems.push(
          `${String(s.name)} calls ${callee}, which declares no internal endpoint for it (packages/platform/src/internal-api/${callee}.ts)`,
        )
    }
  for (const [callee, endpoints] of Object.entries(apis))
    for (const e of Object.values(endpoints))
      for (const c of e.callers ?? [])
        if (!callsOf(c).includes(callee))
          problems.push(`${e.operationId} names ${c} as a caller, which does not list ${callee} in calls`)
  return problems
}
