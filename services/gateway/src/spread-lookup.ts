import { lookup, type LookupAddress, type LookupOptions } from 'node:dns'

/**
 * Every address of an upstream's name, in a random order, for each new connection of the proxy's
 * pools. Compose (and any DNS round-robin) names each replica of a service by one address; the
 * system resolver sorts them (RFC 6724), so a plain lookup would send most new connections to the
 * same replica and leave another with none.
 */
export function spreadLookup(
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0)
    const order = shuffled(addresses)
    if (options.all) return callback(null, order)
    const first = order[0]!
    callback(null, first.address, first.family)
  })
}

/** A copy of `items` in a random order (Fisher-Yates). */
export function shuffled<T>(items: readonly T[], random: () => number = Math.random): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
