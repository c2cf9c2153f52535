import { connectService, onShutdown, readVersion, runMain } from '@clinic/platform'
import { buildApp } from './app'
import { loadCommsConfig } from './config'
import { SCHEMA } from './db/migrations'

runMain('comms', async () => {
  const config = loadCommsConfig()
  const infra = await connectService({ service: 'comms', schema: SCHEMA, config, outbox: true })
  const app = await buildApp({
    ...infra,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
  })
  await app.listen({ port: config.COMMS_PORT, host: config.HOST })
  onShutdown(infra.logger, [() => app.close(), () => infra.close()])
})
