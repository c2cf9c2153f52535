import { connectService, onShutdown, readVersion, runMain } from '@clinic/platform'
import { buildApp } from './app'
import { loadAppointmentsConfig } from './config'
import { SCHEMA } from './db/migrations'

runMain('appointments', async () => {
  const config = loadAppointmentsConfig()
  const infra = await connectService({ service: 'appointments', schema: SCHEMA, config, outbox: true })
  const app = await buildApp({
    ...infra,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
  })
  await app.listen({ port: config.APPOINTMENTS_PORT, host: config.HOST })
  onShutdown(infra.logger, [() => app.close(), () => infra.close()])
})
