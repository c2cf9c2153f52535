import { shuffled, spreadLookup } from '../../src/spread-lookup'

describe('spreadLookup', () => {
  it('orders the addresses at random, each order coming up', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 600; i++) seen.add(shuffled(['a', 'b', 'c']).join(''))
    expect([...seen].sort()).toEqual(['abc', 'acb', 'bac', 'bca', 'cab', 'cba'])
  })

  it('keeps every address once', () => {
    expect(shuffled([1, 2, 3, 4, 5], () => 0.99).sort()).toEqual([1, 2, 3, 4, 5])
  })

  it('answers as net.connect asks: one address, or all of them', async () => {
    const one = await new Promise<[string, number]>((resolve, reject) =>
      spreadLookup('localhost', { family: 4 }, (err, address, family) =>
        err ? reject(err) : resolve([address as string, family!]),
      ),
    )
    expect(one).toEqual(['127.0.0.1', 4])
    const all = await new Promise<unknown>((resolve, reject) =>
      spreadLookup('localhost', { family: 4, all: true }, (err, addresses) =>
        err ? reject(err) : resolve(addresses),
      ),
    )
    expect(all).toEqual([{ address: '127.0.0.1', family: 4 }])
  })
})
