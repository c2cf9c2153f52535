// The two headers that make writes safe to repeat and safe against lost updates (DESIGN.md section 3):
// Idempotency-Key on POST, If-Match on PATCH from the last ETag this client saw of that resource.
import type { Middleware } from 'openapi-fetch'

// A long full sync reads many resources; the oldest tags are the least likely to be patched next.
const MAX_REMEMBERED = 1000

export function safeWrites(newKey: () => string): Middleware {
  const etags = new Map<string, string>()

  return {
    onRequest({ request }) {
      // Set here, before the retrying fetch, so every retry of one call carries the same key.
      if (request.method === 'POST' && !request.headers.has('idempotency-key')) {
        request.headers.set('Idempotency-Key', newKey())
      }
      if (request.method === 'PATCH' && !request.headers.has('if-match')) {
        const etag = etags.get(resourceOf(request.url))
        if (etag) request.headers.set('If-Match', etag)
      }
      return request
    },
    onResponse({ request, response }) {
      const etag = response.headers.get('etag')
      if (!etag || !response.ok || !['GET', 'POST', 'PATCH'].includes(request.method)) return undefined
      // A created (201) or accepted (202) resource lives at Location, not at the collection posted to.
      const created = response.status === 201 || response.status === 202
      const location = created ? response.headers.get('location') : null
      const key = resourceOf(location ?? request.url, request.url)
      etags.delete(key) // re-inserted last, so it is evicted last
      etags.set(key, etag)
      if (etags.size > MAX_REMEMBERED) etags.delete(etags.keys().next().value as string)
      return undefined
    },
  }
}

/** The path of a resource, the same whether it came from a request URL or a (relative) Location. */
function resourceOf(url: string, base?: string): string {
  return new URL(url, base).pathname.replace(/\/+$/, '')
}
