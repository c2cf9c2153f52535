import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { DeliveryError } from '../../src/domain/deliver-message'
import { SmtpProvider } from '../../src/providers/smtp-provider'

/**
 * An SMTP server that goes silent: it never greets, or greets and then never answers. nodemailer's
 * own waits (30 s for the greeting, 10 min of silence) would outlast the stale-sending window.
 */
async function silentServer(greet: boolean) {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
    if (greet) socket.write('220 slow.example.test ESMTP\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

const message = {
  id: '0190c5a0-0000-7000-8000-0000000a0a01',
  channel: 'email' as const,
  name: 'Testa',
  address: 'slow@example.test',
  subject: 'Cita',
  body: 'x',
}

describe('SMTP waits are bounded (SMTP_*_TIMEOUT_MS)', () => {
  for (const [what, greet] of [
    ['no greeting', false],
    ['silence after the greeting', true],
  ] as const)
    it(`${what}: a transient failure within the configured time, not nodemailer's minutes`, async () => {
      const server = await silentServer(greet)
      const provider = new SmtpProvider(server.url, 'Clinic <no-reply@clinic.example>', 1, {
        connectionMs: 1000,
        greetingMs: 300,
        socketMs: 300,
      })
      const started = Date.now()
      try {
        const err = await provider.send(message).then(
          () => null,
          (e: unknown) => e,
        )
        expect(err).toBeInstanceOf(DeliveryError)
        expect(err).toMatchObject({
          permanent: false,
          reason: expect.stringMatching(/^smtp connection error/),
        })
        expect(Date.now() - started).toBeLessThan(5000)
      } finally {
        provider.close()
        await server.close()
      }
    })
})
