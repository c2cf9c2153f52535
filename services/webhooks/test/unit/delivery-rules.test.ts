import { createHmac } from 'node:crypto'
import { makeEvent } from '@clinic/platform/core'
import { Webhook } from 'standardwebhooks'
import { isPublicAddress, urlProblem } from '../../src/delivery/address-policy'
import { outcomeOf, retryDelay } from '../../src/delivery/worker'
import type { Job } from '../../src/delivery/job-store'
import { thinData } from '../../src/domain/catalogue'
import { SecretBox, newSecret, signatureHeader } from '../../src/domain/secrets'

test.each([
  ['93.184.216.34', true],
  ['2606:2800:220:1:248:1893:25c8:1946', true],
  ['127.0.0.1', false],
  ['10.0.0.1', false],
  ['172.16.5.4', false],
  ['192.168.1.1', false],
  ['100.64.0.1', false],
  ['169.254.169.254', false],
  ['0.0.0.0', false],
  ['224.0.0.1', false],
  ['255.255.255.255', false],
  ['::1', false],
  ['::', false],
  ['::ffff:127.0.0.1', false],
  ['::ffff:169.254.169.254', false],
  ['::ffff:93.184.216.34', true],
  ['fe80::1', false],
  ['fd00:ec2::254', false],
  ['ff02::1', false],
  ['64:ff9b::a00:1', false],
  // NAT64 translates to whatever IPv4 address it carries: refused, public ones too.
  ['64:ff9b::5db8:d822', false],
  ['64:ff9b:1::a00:1', false],
  ['2002:a00:1::', false],
  // IPv4-compatible (::/96, deprecated): the URL parser writes [::127.0.0.1] as [::7f00:1].
  ['::127.0.0.1', false],
  ['::7f00:1', false],
  ['::a9fe:a9fe', false],
  ['::5db8:d822', false],
  // The rest of ::/8 and other space outside 2000::/3 is no global unicast either.
  ['::1:7f00:1', false],
  ['::ffff:0:7f00:1', false],
  ['4000::1', false],
  ['not-an-ip', false],
])('isPublicAddress(%s) is %s', (address, expected) => {
  expect(isPublicAddress(address)).toBe(expected)
})

test('urlProblem: https only unless insecure is allowed, no credentials or fragments', () => {
  expect(urlProblem('https://hooks.example.com/x', false)).toBeNull()
  expect(urlProblem('http://hooks.example.com/x', false)).toBe('must be https')
  expect(urlProblem('http://127.0.0.1:9/x', true)).toBeNull()
  expect(urlProblem('ftp://hooks.example.com/', false)).toBe('must be https')
  expect(urlProblem('https://a:b@hooks.example.com/', false)).toBe('must not carry credentials')
  expect(urlProblem('https://hooks.example.com/#x', false)).toBe('must not have a fragment')
  expect(urlProblem('https://0x7f.1/', false)).toBe('127.0.0.1 is not a public address')
  expect(urlProblem('https://[::127.0.0.1]/x', false)).toBe('::7f00:1 is not a public address')
  expect(urlProblem('https://[::ffff:127.0.0.1]/x', false)).toBe('::ffff:7f00:1 is not a public address')
  expect(urlProblem('https://[::ffff:93.184.216.34]/x', false)).toBeNull()
})

test('our signature verifies with the reference library and by the documented scheme; two secrets give two', () => {
  const [a, b] = [newSecret(), newSecret()]
  const body = '{"type":"webhook.test"}'
  const ts = Math.floor(Date.now() / 1000)
  const headers = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(ts),
    'webhook-signature': signatureHeader([a, b], 'msg_1', ts, body),
  }
  expect(headers['webhook-signature'].split(' ')).toHaveLength(2)
  expect(new Webhook(a).verify(body, headers)).toEqual({ type: 'webhook.test' })
  expect(new Webhook(b).verify(body, headers)).toEqual({ type: 'webhook.test' })
  // As DESIGN section 10 documents it, by hand: `v1,` + base64 HMAC-SHA256 of "id.timestamp.body"
  // keyed with the bytes after `whsec_`, one per secret.
  const byHand = (secret: string) =>
    `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
      .update(`msg_1.${ts}.${body}`)
      .digest('base64')}`
  expect(headers['webhook-signature']).toBe(`${byHand(a)} ${byHand(b)}`)
  // A changed body, id or timestamp no longer verifies.
  expect(() => new Webhook(a).verify('{"type":"webhook.tested"}', headers)).toThrow()
  expect(() => new Webhook(a).verify(body, { ...headers, 'webhook-id': 'msg_2' })).toThrow()
  expect(() => new Webhook(a).verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) })).toThrow()
})

test('a sealed secret opens only with its key and on its endpoint', () => {
  const box = new SecretBox('k'.repeat(40))
  const secret = newSecret()
  const sealed = box.seal(secret, 'e1')
  expect(box.open(sealed, 'e1')).toBe(secret)
  expect(() => box.open(sealed, 'e2')).toThrow()
  expect(() => new SecretBox('x'.repeat(40)).open(sealed, 'e1')).toThrow()
})

test('retries follow the schedule with at most 20% jitter, then stop', () => {
  const schedule = [5000, 300_000]
  expect(retryDelay(schedule, 1, () => 0)).toBe(4000)
  expect(retryDelay(schedule, 1, () => 1)).toBe(6000)
  expect(retryDelay(schedule, 2, () => 0.5)).toBe(300_000)
  expect(retryDelay(schedule, 3)).toBeNull()
  const job = { attempts: 3 } as Job
  const now = new Date('2026-11-26T00:00:00Z')
  const failed = outcomeOf(
    job,
    { status: 500, ok: false, durationMs: 5, error: 'HTTP 500' },
    { retrySchedule: schedule },
    now,
  )
  expect(failed).toMatchObject({ status: 'failed', next_attempt_at: null })
  expect(failed.disableIfNoSuccessSince).toEqual(new Date('2026-11-25T00:00:00Z'))
  const gone = outcomeOf(
    { attempts: 1 } as Job,
    { status: 410, ok: false, durationMs: 5, error: 'HTTP 410' },
    { retrySchedule: schedule },
    now,
  )
  expect(gone).toMatchObject({ status: 'failed', disable: 'the receiver answered 410 Gone' })
})

test('thin data carries ids, version, changed field names and status, never personal data', () => {
  const event = makeEvent({
    type: 'patient.updated',
    source: 'clinic/patients',
    subject: 'p1',
    companyId: 1,
    codalmacen: 'ALM1',
    data: {
      id: 'p1',
      codalmacen: 'ALM1',
      first_name: 'Ana',
      last_name: 'García',
      email: 'ana@example.com',
      phone: '+34600000000',
      preferred_channel: 'sms',
      language: 'es',
      requires_legal_guardian: false,
      guardian: null,
      version: 3,
      changes: ['email'],
    },
  })
  const data = thinData(event)
  expect(data).toEqual({
    id: 'p1',
    resource_type: 'patient',
    codalmacen: 'ALM1',
    version: 3,
    changes: ['email'],
    url: '/api/patients/p1',
  })
  expect(JSON.stringify(data)).not.toMatch(/Ana|García|example\.com|\+34/)
})
