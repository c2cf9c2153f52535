import { ConfigError } from '@clinic/platform'
import list from '@clinic/platform/services.json'
import { loadGatewayConfig } from '../../src/config'
import { RESOURCE_TYPES, ROUTED, upstreamEnv } from '../../src/families'

const env = { INTERNAL_AUTH_SECRET: 'x'.repeat(32), EVENT_SIGNING_SECRET: 'y'.repeat(32) }

describe('the services table', () => {
  it('routes every service of services.json, in its order', () => {
    const families = list.services.flatMap((s) => Object.keys(s.families).map((f) => [f, s.name]))
    expect(ROUTED.map((f) => [f.family, f.service])).toEqual(families)
    for (const p of list.planned) expect(RESOURCE_TYPES.get(p.family)).toBe(p.resource_type)
  })

  it('takes each upstream from <NAME>_URL, default http://127.0.0.1:<port>', () => {
    const config = loadGatewayConfig({ ...env, COMMS_URL: 'http://comms:9000' })
    expect(config.upstreams).toEqual({
      patients: 'http://127.0.0.1:8081',
      appointments: 'http://127.0.0.1:8082',
      comms: 'http://comms:9000',
      audit: 'http://127.0.0.1:8084',
      webhooks: 'http://127.0.0.1:8085',
    })
    expect(upstreamEnv('patients')).toBe('PATIENTS_URL')
    expect(Object.isFrozen(config)).toBe(true)
  })

  it('reports a bad upstream with the other variables', () => {
    expect(() => loadGatewayConfig({ ...env, AUDIT_URL: 'ftp://x', GATEWAY_PORT: 'no' })).toThrow(ConfigError)
    expect(() => loadGatewayConfig({ ...env, AUDIT_URL: 'ftp://x', GATEWAY_PORT: 'no' })).toThrow(
      /AUDIT_URL[\s\S]*GATEWAY_PORT|GATEWAY_PORT[\s\S]*AUDIT_URL/,
    )
  })
})

describe('TRUST_PROXY', () => {
  it('takes false, a number of hops, or proxy addresses and ranges', () => {
    expect(loadGatewayConfig(env).trustProxy).toBe(false)
    expect(loadGatewayConfig({ ...env, TRUST_PROXY: '1' }).trustProxy).toBe(1)
    expect(loadGatewayConfig({ ...env, TRUST_PROXY: '10.0.0.0/8, 192.168.1.7' }).trustProxy).toBe(
      '10.0.0.0/8,192.168.1.7',
    )
    expect(loadGatewayConfig({ ...env, TRUST_PROXY: 'fd00::/8' }).trustProxy).toBe('fd00::/8')
  })

  it('refuses true (every hop trusted: the client would choose its address) and anything else', () => {
    for (const bad of ['true', 'yes', '10.0.0.0/8,evil'])
      expect(() => loadGatewayConfig({ ...env, TRUST_PROXY: bad })).toThrow(/TRUST_PROXY must be/)
  })
})
