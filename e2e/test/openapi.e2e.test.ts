import { readFileSync } from 'node:fs'
import path from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { call, stack } from '../src/client'

const COMMITTED = path.resolve(__dirname, '../../docs/openapi.json')

/** JSON pointers where two documents differ (a whole subtree counts once). */
function differences(a: unknown, b: unknown, at = ''): string[] {
  if (isDeepStrictEqual(a, b)) return []
  const objects = a !== null && b !== null && typeof a === 'object' && typeof b === 'object'
  if (!objects || Array.isArray(a) !== Array.isArray(b)) return [at || '/']
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])]
  return keys.flatMap((k) => differences(x[k], y[k], `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`))
}

describe('the API contract', () => {
  it('is docs/openapi.json: the document the running gateway serves is the committed one', async () => {
    const served = await call('GET', '/openapi.json')
    expect(served.status).toBe(200)
    const committed: unknown = JSON.parse(readFileSync(COMMITTED, 'utf8'))
    const diff = differences(served.body, committed)
    if (diff.length)
      throw new Error(
        `docs/openapi.json differs from GET /api/openapi.json at ${diff.slice(0, 10).join(', ')}` +
          `${diff.length > 10 ? ` and ${diff.length - 10} more` : ''}: run npm run openapi and commit the file`,
      )
    // Under both bases.
    expect((await call('GET', '/openapi.json', { base: `${stack().api}/3` })).body).toEqual(served.body)
  })
})
