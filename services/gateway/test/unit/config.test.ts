import { spawnSync } from 'node:child_process'
import { ConfigError } from '@clinic/platform'
import list from '@clinic/platform/services.json'
import { loadAdminConfig, loadGatewayConfig, trustProxyOf } from '../../src/config'
import { RESOURCE_TYPES, ROUTED, upstreamEnv } from '../../src/families'

const env = { GATEWAY_SIGNING_KEY: process.env.GATEWAY_SIGNING_KEY }

describe('the services table', () => {
  it('routes every service of services.json, in its order', () => {
    const families = list.services.flatMap((s) => Object.keys(s.families).map((f) => [f, s.name]))
    expect(ROUTED.map((f) => [f.family, f.service])).toEqual(families)
    const planned: Array<{ family: string; resource_type: string }> = list.planned
    for (const p of planned) expect(RESOURCE_TYPES.get(p.family)).toBe(p.resource_type)
  })

  it('takes each upstream from <NAME>_URL, default http://127.0.0.1:<port>', () => {
    const config = loadGatewayConfig({ ...env, COMMS_URL: 'http://comms:9000' })
    expect(config.upstreams).toEqual({
      patients: 'http://127.0.0.1:8081',
      appointments: 'http://127.0.0.1:8082',
      comms: 'http://comms:9000',
      audit: 'http://127.0.0.1:8084',
      clinical: 'http://127.0.0.1:8086',
      webhooks: 'http://127.0.0.1:8085',
      documents: 'http://127.0.0.1:8087',
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
    expect(loadGatewayConfig({ ...env, TRUST_PROXY: 'fd00:10::/32' }).trustProxy).toBe('fd00:10::/32')
    expect(trustProxyOf('5')).toBe(5)
    expect(trustProxyOf('0')).toBe(false)
    expect(trustProxyOf('10.1.2.3, 2001:db8::7, ::ffff:10.0.0.0/104, 172.16.0.0/12')).toBe(
      '10.1.2.3,2001:db8::7,::ffff:10.0.0.0/104,172.16.0.0/12',
    )
  })

  it('refuses true (every hop trusted: the client would choose its address) and anything else', () => {
    for (const bad of [
      'true',
      'yes',
      '10.0.0.0/8,evil',
      '10.0.0.0/33',
      '999.1.1.1',
      'fe80::1%eth0',
      '1.2.3.4/',
    ])
      expect(() => loadGatewayConfig({ ...env, TRUST_PROXY: bad })).toThrow(/TRUST_PROXY must be/)
    expect(() => trustProxyOf(' ')).toThrow(/TRUST_PROXY must be/)
  })

  it.each([
    ['0.0.0.0/0', '0.0.0.0/0 is wider than /8'],
    ['0.0.0.0/1,128.0.0.0/1', '0.0.0.0/1 is wider than /8'],
    ['10.0.0.0/8,100.64.0.0/7', '100.64.0.0/7 is wider than /8'],
    ['::/0', '::/0 is wider than /32'],
    ['fd00::/8', 'fd00::/8 is wider than /32'],
    ['2001:db8::/31', '2001:db8::/31 is wider than /32'],
    // IPv4 written as IPv6: the last 32 bits are the IPv4 range.
    ['::ffff:0.0.0.0/96', '::ffff:0.0.0.0/96 is wider than /8'],
    ['::ffff:0:0/100', '::ffff:0:0/100 is wider than /8'],
    ['6', '6 proxy hops is more than 5'],
    ['99', '99 proxy hops is more than 5'],
  ])('refuses %s in one line (a ConfigError: exit 78, no stack trace)', (value, problem) => {
    let caught: unknown
    try {
      loadGatewayConfig({ ...env, TRUST_PROXY: value })
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(ConfigError)
    const message = (caught as Error).message
    expect(message).toContain(`TRUST_PROXY: ${problem}`)
    expect(message).not.toContain('\n')
  })
})

describe('the gateway process', () => {
  it.each(['0.0.0.0/0', '0.0.0.0/1,128.0.0.0/1', '6'])(
    'does not start with TRUST_PROXY=%s: one line naming it, exit code 78, no stack trace',
    (value) => {
      const run = spawnSync(process.execPath, [require.resolve('../../dist/server.js')], {
        env: { ...process.env, ...env, TRUST_PROXY: value, GATEWAY_PORT: '1', LOG_LEVEL: 'silent' },
        encoding: 'utf8',
        timeout: 20_000,
      })
      expect(run.status).toBe(78)
      expect(run.stderr.trim().split('\n')).toHaveLength(1)
      expect(run.stderr).toMatch(/^TRUST_PROXY: /)
      expect(run.stderr).not.toMatch(/\bat .*\.js:\d+/)
    },
  )
})

describe('AUTH_FAILURES_PER_ADDRESS_PER_MINUTE', () => {
  it('is 60 by default and a positive integer', () => {
    expect(loadGatewayConfig(env).AUTH_FAILURES_PER_ADDRESS_PER_MINUTE).toBe(60)
    expect(loadGatewayConfig({ ...env, AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: '10' })).toMatchObject({
      AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: 10,
    })
    expect(() => loadGatewayConfig({ ...env, AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: '0' })).toThrow(
      /AUTH_FAILURES_PER_ADDRESS_PER_MINUTE/,
    )
  })
})

describe('the admin configuration', () => {
  it('takes TOKEN_MAX_EXPIRY_DAYS (365 by default)', () => {
    expect(loadAdminConfig({})).toMatchObject({ TOKEN_MAX_EXPIRY_DAYS: 365 })
    expect(loadAdminConfig({ TOKEN_MAX_EXPIRY_DAYS: '90' }).TOKEN_MAX_EXPIRY_DAYS).toBe(90)
    expect(() => loadAdminConfig({ TOKEN_MAX_EXPIRY_DAYS: '0' })).toThrow(/TOKEN_MAX_EXPIRY_DAYS/)
  })
})
