import { startApp } from '../helpers'

// The run's database and vhost (jest global setup); the schema migrates on first use.
it('migrates, and answers /health/live and /health/ready as the service role', async () => {
  const h = await startApp()
  try {
    expect((await h.app.inject({ url: '/health/live' })).statusCode).toBe(200)
    expect((await h.app.inject({ url: '/health/ready' })).statusCode).toBe(200)
  } finally {
    await h.close()
  }
})
