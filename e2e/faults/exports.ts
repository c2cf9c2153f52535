import type { FaultStack, Tenant } from './harness'
import { waitFor } from './harness'

/**
 * What the Bulk Data export fault scenario needs: a company of `n` patients (written straight to
 * the patients table: the export is under test, not the writes), an export kicked off and faulted
 * once it has written its first page, then polled as a Bulk Data client polls (waiting out 429 and
 * 5xx as it waits out 202) and downloaded: the checker says what is missing and what is twice.
 */

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function seedPatients(fs: FaultStack, companyId: number, n: number): Promise<string[]> {
  const rows = await fs.sql<{ id: string }>(
    `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date)
     SELECT $1, gen_random_uuid(), 'ALM1', 'Export', 'Fault' || i, date '1960-01-01' + i
       FROM generate_series(1, $2::integer) i RETURNING id`,
    [companyId, n],
  )
  return rows.map((r) => r.id)
}

/** A GET with the token, retried while the answer is no answer at all (the gateway restarting). */
async function get(url: string, token: string) {
  for (let i = 0; ; i++) {
    try {
      return await fetch(url, { headers: { 'x-service-token': token } })
    } catch (err) {
      if (i > 100) throw err
      await pause(200)
    }
  }
}

interface Manifest {
  output: Array<{ url: string }>
  error: Array<{ url: string }>
}

export interface ExportVerdict {
  fault: string
  exported: number
  /** The manifest's `error` files: none, whatever the fault. */
  errors: number
  missing: number
  twice: number
}

/**
 * Kicks off a Patient export, runs `fault` once the export has written a page (mid-file), then
 * polls it to the end and downloads every file: the patients each once, none missing.
 */
export async function exportThrough(
  fs: FaultStack,
  t: Tenant,
  expected: string[],
  name: string,
  fault: () => Promise<void>,
): Promise<ExportVerdict> {
  const kick = await fetch(`${fs.info.api}/fhir/R4/$export?_type=Patient`, {
    headers: { 'x-service-token': t.token, prefer: 'respond-async', accept: 'application/fhir+json' },
  })
  if (kick.status !== 202) throw new Error(`kick-off: ${kick.status} ${await kick.text()}`)
  const status = kick.headers.get('content-location')!
  const id = status.split('/').at(-1)!
  await waitFor(
    async () =>
      Number((await fs.sql('SELECT exported FROM identity.fhir_exports WHERE id = $1', [id]))[0]?.exported) >
      0,
    { timeoutMs: 30_000, intervalMs: 20, what: 'the export’s first page' },
  )
  // Mid-file: a fault that came after the last page would prove nothing.
  const [before] = await fs.sql('SELECT status FROM identity.fhir_exports WHERE id = $1', [id])
  if (before.status !== 'in-progress')
    throw new Error(`${name}: the export was ${before.status} before the fault; the scenario proves nothing`)
  await fault()
  let manifest: Manifest | undefined
  for (const deadline = Date.now() + 90_000; !manifest && Date.now() < deadline;) {
    const res = await get(status, t.token)
    if (res.status === 200) manifest = (await res.json()) as Manifest
    else if (res.status === 202 || res.status === 429 || res.status >= 500)
      await pause(1000 * Math.min(5, Number(res.headers.get('retry-after') ?? 1) || 1))
    else throw new Error(`status: ${res.status} ${await res.text()}`)
  }
  if (!manifest) throw new Error(`${name}: the export did not complete in 90 s`)
  const seen = new Map<string, number>()
  for (const f of manifest.output) {
    const text = await (await get(f.url, t.token)).text()
    for (const line of text.split('\n').filter(Boolean)) {
      const r = JSON.parse(line) as { id: string }
      seen.set(r.id, (seen.get(r.id) ?? 0) + 1)
    }
  }
  const [row] = await fs.sql('SELECT exported FROM identity.fhir_exports WHERE id = $1', [id])
  return {
    fault: name,
    exported: Number(row.exported),
    errors: manifest.error.length,
    missing: expected.filter((p) => !seen.has(p)).length,
    twice: [...seen.values()].filter((n) => n > 1).length,
  }
}
