import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/** The only IPv6 addresses assigned as global unicast (RFC 4291, IANA). */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3')

/**
 * Which addresses a webhook may reach (DESIGN.md section 10): public unicast only. Loopback,
 * private, carrier-grade NAT, link-local (169.254.169.254, the cloud metadata address, is one),
 * unique-local (fd00:ec2::254 is AWS's), multicast, reserved and the IPv6 forms that carry an IPv4
 * address (NAT64 well-known and local-use, 6to4, Teredo, SIIT) are all refused: only ranges
 * ipaddr.js calls `unicast` pass, after an IPv4-mapped address (::ffff:a.b.c.d) is read as the IPv4
 * address it is. ipaddr.js calls the rest of ::/8 unicast, IPv4-compatible ::a.b.c.d included
 * (the URL parser writes [::127.0.0.1] as [::7f00:1], and hosts still route some of it to IPv4),
 * so an IPv6 address must also be in 2000::/3, the global unicast block.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address) // ::ffff:10.0.0.1 -> 10.0.0.1
  if (parsed.range() !== 'unicast') return false
  return parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)
}

/** A name's addresses (all of them: one bad answer refuses the URL). */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

/** The host of a URL as a resolver or socket takes it: IPv6 literals lose their brackets. */
export const bareHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1')

export class UnsafeAddress extends Error {}

export interface AddressPolicy {
  /** WEBHOOKS_ALLOW_INSECURE: plain http and any address (development only). */
  allowInsecure: boolean
  resolve: Resolver
}

/** What is wrong with a URL before any lookup (scheme, credentials), or null. */
export function urlProblem(raw: string, allowInsecure: boolean): string | null {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'is not a URL'
  }
  if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) return 'must be https'
  if (url.username || url.password) return 'must not carry credentials'
  if (url.hash) return 'must not have a fragment'
  const host = bareHost(url)
  if (isIP(host) && !allowInsecure && !isPublicAddress(host)) return `${host} is not a public address`
  return null
}

/**
 * The addresses to connect to, every one checked: an IP literal is itself, a name is looked up now
 * (at each attempt). The caller connects to the first one and no other (the lookup is pinned), so
 * a DNS answer that changes between this check and the connection cannot take the request elsewhere.
 */
export async function checkedAddresses(url: URL, policy: AddressPolicy): Promise<string[]> {
  const host = bareHost(url)
  const addresses = isIP(host) ? [host] : await policy.resolve(host)
  if (!addresses.length) throw new UnsafeAddress(`${host} has no address`)
  if (!policy.allowInsecure) {
    const bad = addresses.find((a) => !isPublicAddress(a))
    if (bad) throw new UnsafeAddress(`${host} resolves to ${bad}, which is not a public address`)
  }
  return addresses
}
