import { isIPv4, isIPv6 } from 'node:net'

/**
 * The eight 16-bit groups of an IPv6 address (`::` expanded, a dotted IPv4 tail as two groups);
 * null when it is not one (a zone id, `%eth0`, is not accepted).
 */
export function ipv6Groups(address: string): number[] | null {
  if (address.includes('%') || !isIPv6(address)) return null
  let text = address.toLowerCase()
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const before = head ? head.split(':') : []
  const after = tail ? tail.split(':') : []
  const zeros = tail === undefined ? [] : Array<string>(8 - before.length - after.length).fill('0')
  return [...before, ...zeros, ...after].map((g) => parseInt(g, 16))
}

/** An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`): its groups 6 and 7 are the IPv4 address. */
export const isMappedIPv4 = (groups: number[]) =>
  groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff

/**
 * What the per-address limits count a client address under: an IPv4 address as it is (an IPv4
 * address mapped into IPv6 too); an IPv6 address by its /64, the network one subscriber is given,
 * so that walking the addresses of one's own prefix does not make a new client each time.
 */
export function addressKey(ip: string): string {
  if (isIPv4(ip)) return ip
  const groups = ipv6Groups(ip.split('%')[0]!)
  if (!groups) return ip
  if (isMappedIPv4(groups))
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join('.')
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}
