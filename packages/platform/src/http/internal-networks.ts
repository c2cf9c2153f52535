import { BlockList, isIP } from 'node:net'
import { ConfigError } from '../config'

/**
 * Who may read a service's /metrics and /openapi.json without an assertion, besides loopback: the
 * private ranges of RFC 1918 and IPv6 unique local addresses, where Compose networks, most pod
 * networks and the monitoring stack live. A pod network outside them (100.64.0.0/10 on some CNIs)
 * goes into INTERNAL_NETWORKS.
 */
export const DEFAULT_INTERNAL_NETWORKS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  'fc00::/7',
] as const

/** `::ffff:10.1.2.3` (a v4 peer on a dual-stack socket) -> `10.1.2.3`. */
const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '')

/**
 * A matcher for loopback plus `networks` (addresses or CIDR ranges, v4 or v6). A bad entry is a
 * ConfigError naming it (the service stops at start-up: exit 78).
 */
export function internalNetworkMatcher(
  networks: readonly string[],
): (address: string | undefined) => boolean {
  const list = new BlockList()
  list.addSubnet('127.0.0.0', 8, 'ipv4')
  list.addAddress('::1', 'ipv6')
  const bad: string[] = []
  for (const entry of networks) {
    const [address = '', bits, ...rest] = entry.trim().split('/')
    const family = isIP(address)
    const max = family === 6 ? 128 : 32
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : -1
    if (!family || rest.length || prefix < 0 || prefix > max) bad.push(entry)
    else list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4')
  }
  if (bad.length)
    throw new ConfigError(`Invalid configuration: INTERNAL_NETWORKS has bad ranges: ${bad.join(', ')}`)
  return (address) => {
    if (!address) return false
    const a = unmapped(address)
    const family = isIP(a)
    return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4')
  }
}
