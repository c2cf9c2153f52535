import { isIPv4 } from 'node:net'
import { ConfigError } from '@clinic/platform'
import { ipv6Groups, isMappedIPv4 } from './address-key'

/** More proxies than this in front of one gateway is a mistake, not a topology. */
export const MAX_PROXY_HOPS = 5
/** The widest range a proxy's addresses may be given as: wider ones hold clients too. */
const WIDEST = { ipv4: 8, ipv6: 32 }

const usage = (raw: string) =>
  new ConfigError(
    `TRUST_PROXY must be false, a number of proxy hops (1) or proxy addresses/ranges (10.0.0.0/8), not "${raw}"`,
  )

/**
 * What is wrong with one address or range of TRUST_PROXY (null: nothing): not an address, or wider
 * than /8 (IPv4) or /32 (IPv6), since a range that wide names clients as well as proxies and lets
 * them choose the address the audit trail and the limits see. An IPv4 range written in IPv6
 * (`::ffff:10.0.0.0/104`) is an IPv4 range.
 */
function rangeProblem(part: string): 'malformed' | string | null {
  const [address = '', prefix, extra] = part.split('/')
  if (extra !== undefined || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return 'malformed'
  const v4 = isIPv4(address)
  const groups = v4 ? null : ipv6Groups(address)
  if (!v4 && !groups) return 'malformed'
  const max = v4 ? 32 : 128
  const bits = prefix === undefined ? max : Number(prefix)
  if (bits > max) return 'malformed'
  const mapped = groups !== null && isMappedIPv4(groups)
  // A mapped range's first 96 bits are the mapping: what is left is an IPv4 prefix.
  const [widest, given] = v4 || mapped ? [WIDEST.ipv4, v4 ? bits : bits - 96] : [WIDEST.ipv6, bits]
  if (given < widest) return `${part} is wider than /${widest}: name the proxies' own addresses or ranges`
  return null
}

/**
 * TRUST_PROXY as Fastify's trustProxy: false, a hop count (1-5), or a list of proxy addresses and
 * ranges (IPv4 /8 or narrower, IPv6 /32 or narrower). Anything else stops start-up with one line
 * (ConfigError, exit 78), never a stack trace from deep in Fastify.
 */
export function trustProxyOf(raw: string): false | number | string {
  const value = raw.trim()
  if (value === 'false' || value === '0') return false
  if (/^\d+$/.test(value)) {
    if (Number(value) > MAX_PROXY_HOPS)
      throw new ConfigError(
        `TRUST_PROXY: ${value} proxy hops is more than ${MAX_PROXY_HOPS}: count the proxies in front of the gateway`,
      )
    return Number(value)
  }
  const parts = value.split(',').map((p) => p.trim())
  if (value === '') throw usage(raw)
  for (const part of parts) {
    const problem = rangeProblem(part)
    if (problem === 'malformed') throw usage(raw)
    if (problem) throw new ConfigError(`TRUST_PROXY: ${problem}`)
  }
  return parts.join(',')
}
