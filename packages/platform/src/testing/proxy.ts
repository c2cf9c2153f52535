import net from 'node:net'

/**
 * A TCP proxy in front of a server (RabbitMQ, in the outage tests): `cut()` destroys every open
 * connection and refuses new ones until `restore()`. It cuts the clients off without stopping the
 * real broker, which other test runs on the machine share. `url` is the target URL through it.
 */
export async function tcpProxy(target: URL) {
  const sockets = new Set<net.Socket>()
  let refusing = false
  let refused = 0
  let accepted = 0
  const server = net.createServer((client) => {
    if (refusing) {
      refused++
      client.destroy()
      return
    }
    accepted++
    const upstream = net.connect(Number(target.port || 5672), target.hostname)
    sockets.add(client)
    sockets.add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  const url = new URL(target.toString())
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    get refused() {
      return refused
    },
    get accepted() {
      return accepted
    },
    get open() {
      return sockets.size
    },
    cut() {
      refusing = true
      for (const s of sockets) s.destroy()
      sockets.clear()
    },
    restore() {
      refusing = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
