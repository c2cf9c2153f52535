// WEBHOOK_SECRET=whsec_... node services/webhooks/examples/receiver.mjs  (PORT, default 4000)
import http from 'node:http'
import { Webhook } from 'standardwebhooks' // the Standard Webhooks reference library

const webhook = new Webhook(process.env.WEBHOOK_SECRET)
const server = http.createServer((req, res) => {
  let body = ''
  req.on('data', (chunk) => (body += chunk))
  req.on('end', () => {
    try {
      const { type, data } = webhook.verify(body, req.headers) // throws unless signed and fresh
      console.log(req.headers['webhook-id'], type, data.url, data.changes)
      res.writeHead(204).end()
    } catch (err) {
      console.error('refused:', err.message)
      res.writeHead(400).end()
    }
  })
})
server.listen(Number(process.env.PORT ?? 4000), '127.0.0.1')
