import { addressKey, ipv6Groups } from '../../src/address-key'

describe('addressKey: what the per-address limits count a client under', () => {
  it.each([
    ['203.0.113.9', '203.0.113.9'],
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['::ffff:cb00:7109', '203.0.113.9'],
    ['2001:db8:aa:bb::1', '2001:db8:aa:bb::/64'],
    ['2001:0DB8:00AA:00BB:FFFF:FFFF:FFFF:FFFF', '2001:db8:aa:bb::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::203.0.113.9', '64:ff9b:0:0::/64'],
    ['not an address', 'not an address'],
  ])('%s -> %s', (ip, key) => {
    expect(addressKey(ip)).toBe(key)
  })

  it('expands IPv6 addresses into eight groups', () => {
    expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0])
    expect(ipv6Groups('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0])
    expect(ipv6Groups('::ffff:10.0.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0a00, 1])
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(ipv6Groups('10.0.0.1')).toBeNull()
    expect(ipv6Groups('fe80::1%eth0')).toBeNull()
  })
})
