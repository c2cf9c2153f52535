import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Which addresses a webhook may reach (DESIGN.md section 10): public unicast only. Loopback,
 * private, carrier-grade NAT, link-local (169.254.169.254, the cloud metadata address, is one),
 * unique-local (fd00:ec2::254 is AWS's), multicast, reserved and the IPv6 forms that carry an IPv4
 * address (mapped ::ffff:a.b.c.d, NAT64, 6to4, Teredo) are all refused: only ranges ipaddr.js calls
 * `unicast` pass, after an IPv4-mapped address is read as the IPv4 address it is.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address) // ::ffff:10.0.0.1 -> 10.0.0.1
  return parsed.range() === 'unicast'
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
