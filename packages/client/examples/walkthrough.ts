// The README's walk-through written only against the generated types (openapi-typescript) and
// openapi-fetch, as an integrator would write it: `npm test` compiles it with `tsc --strict` and the
// e2e contract suite runs it through Prism. Create, list (with and without paging), book, check in,
// send a message, read the audit trail.
import createClient from 'openapi-fetch'
import type { components, paths } from '../src/schema'

type Patient = components['schemas']['Patient']

/** Fails with the problem's code when an answer is not the expected success. */
function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.data === undefined) {
    const code = (result.error as { code?: string } | undefined)?.code
    throw new Error(`${result.response.url}: ${result.response.status} ${code ?? ''}`)
  }
  return result.data
}

/** `day` (YYYY-MM-DD, in the future) is when the appointment is booked; `fetch` may be a checked one. */
export async function walkThrough(baseUrl: string, token: string, day: string, fetch = globalThis.fetch) {
  const api = createClient<paths>({ baseUrl, headers: { 'X-service-Token': token }, fetch })

  const created: Patient = must(
    await api.POST('/patients', {
      params: { header: { 'idempotency-key': `walk-${day}-${token.slice(-8)}` } },
      body: { first_name: 'Pablo', last_name: 'Ejemplo', birth_date: '1975-09-30', codalmacen: 'ALM1' },
    }),
  )
  const firstPage = must(await api.GET('/patients'))
  const secondPage = must(
    await api.GET('/patients', { params: { query: { limit: 1, offset: 0, sort: '-created_at' } } }),
  )
  const read = await api.GET('/patients/{id}', { params: { path: { id: created.id } } })
  const etag = read.response.headers.get('etag') ?? '"1"'
  const patched = must(
    await api.PATCH('/patients/{id}', {
      params: { path: { id: created.id }, header: { 'if-match': etag } },
      body: { email: 'pablo@example.test', preferred_channel: 'email' },
    }),
  )

  const appointment = must(
    await api.POST('/appointments', {
      body: {
        patient_id: created.id,
        codalmacen: 'ALM1',
        practitioner: 'dra-ejemplo',
        starts_at: `${day}T09:30:00+01:00`,
        ends_at: `${day}T10:00:00+01:00`,
        reason: 'revision',
      },
    }),
  )
  const day0 = must(
    await api.GET('/appointments', {
      params: { query: { codalmacen: 'ALM1', from: `${day}T00:00:00Z`, to: `${day}T23:59:59Z` } },
    }),
  )
  const checkedIn = must(
    await api.POST('/appointments/{id}/checkin', { params: { path: { id: appointment.id } } }),
  )
  const message = must(
    await api.POST('/comms/send', {
      body: { patient_id: created.id, channel: 'email', subject: 'Su cita', body: 'Le esperamos.' },
    }),
  )
  const trail = must(
    await api.GET('/audit/events', {
      params: { query: { resource_type: 'appointment', resource_id: appointment.id, limit: 50 } },
    }),
  )
  return { created, firstPage, secondPage, patched, appointment, day: day0, checkedIn, message, trail }
}
