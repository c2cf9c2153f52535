import { connectService, onShutdown, readVersion, runMain } from '@clinic/platform'
import { buildApp } from './app'
import { loadPatientsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

runMain('patients', async () => {
  const config = loadPatientsConfig()
  // Requests run as the service role, under row-level security; migrations ran as the owner.
  const infra = await connectService({
    service: 'patients',
    schema: SCHEMA,
    role: APP_ROLE,
    config,
    outbox: true,
  })
  const app = await buildApp({
    ...infra,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
  })
  await app.listen({ port: config.PATIENTS_PORT, host: config.HOST })
  onShutdown(infra.logger, [() => app.close(), () => infra.close()])
})
