import { Counter, Registry } from 'prom-client'
import { serveMetrics } from '@clinic/platform'

describe('METRICS_PORT: a listener for /metrics alone', () => {
  it('answers GET /metrics with the registry, and 404 to anything else (the API is not there)', async () => {
    const registry = new Registry()
    new Counter({ name: 'probe_total', help: 'a probe', registers: [registry] }).inc(3)
    const server = await serveMetrics(registry, 0, '127.0.0.1')
    const at = (path: string, method = 'GET') => fetch(`http://127.0.0.1:${server.port}${path}`, { method })
    try {
      const res = await at('/metrics')
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe(registry.contentType)
      expect(await res.text()).toContain('probe_total 3')
      for (const [path, method] of [
        ['/patients', 'GET'],
        ['/api/patients', 'GET'],
        ['/openapi.json', 'GET'],
        ['/metrics', 'POST'],
        ['/health/ready', 'GET'],
      ] as const)
        expect([path, method, (await at(path, method)).status]).toEqual([path, method, 404])
    } finally {
      await server.close()
    }
  })
})
