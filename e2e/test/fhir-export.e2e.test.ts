import { Client as Pg } from 'pg'
import type { Resource } from '@medplum/fhirtypes'
import { fhirProblems } from '@clinic/platform/testing'
import { SAMPLE_PNG, call, makeTenant, sql, stack, tokenFor, type Tenant } from '../src/client'
import { moveGatewayClock } from '../src/stack'

/**
 * FHIR Bulk Data export from outside (HL7 Bulk Data Access IG 2.0.0, DESIGN.md section 19), as a
 * Bulk Data client runs it: kick-off with `Prefer: respond-async`, status polled honouring
 * Retry-After, every file downloaded with the token and parsed line by line, every resource through
 * the StructureDefinition validator. Then what a client relies on: the increments are exact with a
 * writer running (a transaction open across transactionTime included), two companies and a
 * center's Group see nothing of each other, DELETE cancels, files expire.
 */
jest.setTimeout(180_000)

interface Manifest {
  transactionTime: string
  request: string
  requiresAccessToken: boolean
  output: Array<{ type: string; url: string; count: number }>
  deleted: Array<{ type: string; url: string; count: number }>
  error: Array<{ type: string; url: string; count: number }>
}
interface Exported {
  manifest: Manifest
  /** Every output line, parsed, by type. */
  byType: Map<string, Resource[]>
  /** The `deleted` lines' DELETE urls (`DocumentReference/<id>`). */
  deletions: string[]
  /** Every file's text, to look for what must not be there. */
  text: string
}

const fhir = () => `${stack().api}/fhir/R4`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function kickoff(
  token: string,
  path = '/$export',
  o: { query?: string; post?: unknown; prefer?: string } = {},
) {
  const res = await fetch(`${fhir()}${path}${o.query ? `?${o.query}` : ''}`, {
    method: o.post === undefined ? 'GET' : 'POST',
    headers: {
      'x-service-token': token,
      accept: 'application/fhir+json',
      ...(o.prefer === '' ? {} : { prefer: o.prefer ?? 'respond-async' }),
      ...(o.post === undefined ? {} : { 'content-type': 'application/fhir+json' }),
    },
    body: o.post === undefined ? undefined : JSON.stringify(o.post),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

/** The status URL polled as the IG says (waiting what Retry-After asks) until it is not 202. */
async function poll(url: string, token: string, progress: string[] = []) {
  for (const started = Date.now(); Date.now() - started < 120_000;) {
    const res = await fetch(url, { headers: { 'x-service-token': token } })
    if (res.status !== 202)
      return { status: res.status, body: (await res.json()) as any, headers: res.headers }
    progress.push(res.headers.get('x-progress') ?? '')
    const wait = Number(res.headers.get('retry-after'))
    expect(wait).toBeGreaterThan(0)
    await sleep(wait * 1000)
  }
  throw new Error(`${url} still running after 120 s`)
}

/** Every file of a manifest downloaded with the token, each line parsed. */
async function download(manifest: Manifest, token: string): Promise<Exported> {
  // A page a service would not answer is an OperationOutcome in `error`: none here.
  expect(manifest.error).toEqual([])
  const byType = new Map<string, Resource[]>()
  const deletions: string[] = []
  let text = ''
  for (const [kind, files] of [
    ['output', manifest.output],
    ['deleted', manifest.deleted],
  ] as const) {
    for (const f of files) {
      const res = await fetch(f.url, {
        headers: { 'x-service-token': token, accept: 'application/fhir+ndjson' },
      })
      expect({ url: f.url, status: res.status, type: res.headers.get('content-type') }).toEqual({
        url: f.url,
        status: 200,
        type: 'application/fhir+ndjson',
      })
      const body = await res.text()
      text += body
      const lines = body.split('\n')
      expect(lines.pop()).toBe('')
      expect(lines.length).toBe(f.count)
      expect(lines.length).toBeLessThanOrEqual(100_000)
      for (const line of lines) {
        const r = JSON.parse(line) as Resource & {
          entry?: Array<{ request: { method: string; url: string } }>
        }
        if (kind === 'deleted') {
          expect(r).toMatchObject({ resourceType: 'Bundle', type: 'transaction' })
          for (const e of r.entry!) {
            expect(e.request.method).toBe('DELETE')
            deletions.push(e.request.url)
          }
        } else {
          expect(r.resourceType).toBe(f.type)
          byType.set(f.type, [...(byType.get(f.type) ?? []), r])
        }
        expect(fhirProblems(r as Parameters<typeof fhirProblems>[0])).toEqual([])
      }
    }
  }
  return { manifest, byType, deletions, text }
}

/** Kick-off, poll, download: one export as a client runs it. */
async function exportAll(token: string, path = '/$export', query = ''): Promise<Exported> {
  const k = await kickoff(token, path, { query })
  expect(k.status).toBe(202)
  const done = await poll(k.headers.get('content-location')!, token)
  expect(done.status).toBe(200)
  return download(done.body as Manifest, token)
}

const ids = (e: Exported, type: string) => (e.byType.get(type) ?? []).map((r) => r.id!)
const post = async (t: Tenant | string, path: string, body: unknown) => {
  const res = await call('POST', path, { token: typeof t === 'string' ? t : t.token, body })
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

let a: Tenant
let b: Tenant
/** Companies of their own for the snapshot and writer tests (their patients stay out of a's exports). */
let snap: Tenant
let written: Tenant
const patientOf: Record<string, string> = {}

async function seed(t: Tenant, center: string, practitioner: string) {
  const patient = await post(t, '/patients', {
    first_name: 'Núria',
    last_name: `Export${center}`,
    birth_date: '1980-02-03',
    codalmacen: center,
    phone: '+34600111222',
  })
  const day = new Date(Date.now() + 2 * 864e5).toISOString().slice(0, 10)
  await post(t, '/appointments', {
    patient_id: patient.id,
    codalmacen: center,
    practitioner,
    starts_at: `${day}T${center === 'ALM1' ? '09' : '15'}:00:00Z`,
    ends_at: `${day}T${center === 'ALM1' ? '09' : '15'}:20:00Z`,
  })
  const exam = await post(t, `/clinical/exams?codalmacen=${center}`, { patient_id: patient.id, practitioner })
  await post(t, `/clinical/exams/${exam.id}/iop`, {
    eye: 'left',
    mmhg: 18,
    method: 'goldmann',
    measured_at: new Date().toISOString(),
  })
  await post(t, '/documents', { patient_id: patient.id, category: 'imaging', title: 'OCT', file: SAMPLE_PNG })
  return patient.id as string
}

beforeAll(async () => {
  ;[a, b, snap, written] = await Promise.all([
    makeTenant(['ALM1', 'ALM2']),
    makeTenant(['ALM1']),
    makeTenant(['ALM1']),
    makeTenant(['ALM1']),
  ])
  for (const [t, practitioner, centers] of [
    [a, 'dr-export', ['ALM1', 'ALM2']],
    [b, 'dr-export-b', ['ALM1']],
  ] as const) {
    await post(t, '/practitioners', {
      id: practitioner,
      name: 'Dr. Export',
      slot_minutes: 20,
      working_hours: [1, 2, 3, 4, 5, 6, 7].flatMap((weekday) =>
        centers.map((c) => ({
          codalmacen: c,
          weekday,
          start: c === 'ALM1' ? '08:00' : '14:00',
          end: c === 'ALM1' ? '14:00' : '20:00',
        })),
      ),
    })
  }
  patientOf.A1 = await seed(a, 'ALM1', 'dr-export')
  patientOf.A2 = await seed(a, 'ALM2', 'dr-export')
  patientOf.B1 = await seed(b, 'ALM1', 'dr-export-b')
})

afterAll(() => moveGatewayClock(stack(), 0))

describe('a Bulk Data client', () => {
  it('kicks off, polls honouring Retry-After, downloads and parses every file: each resource valid, the company’s only', async () => {
    // What the server says it offers (no token needed), as a client reads it first.
    const cs = (await call('GET', '/fhir/R4/metadata')).body
    expect(cs.instantiates).toEqual(['http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data'])
    expect(cs.rest[0].operation.map((o: { name: string }) => o.name)).toEqual(['export', 'group-export'])
    const k = await kickoff(a.token)
    expect(k.status).toBe(202)
    expect(k.headers.get('x-service-version')).toBeTruthy()
    const status = k.headers.get('content-location')!
    expect(status).toMatch(new RegExp(`^${fhir().replace(/[/.]/g, '\\$&')}/\\$export/[0-9a-f-]{36}$`))
    const done = await poll(status, a.token)
    expect(done.status).toBe(200)
    const m = done.body as Manifest
    expect(m).toMatchObject({
      request: `${fhir()}/$export`,
      requiresAccessToken: true,
      deleted: [],
      error: [],
    })
    expect(Date.parse(m.transactionTime)).toBeLessThanOrEqual(Date.now())
    const e = await download(m, a.token)
    // Every type the token reads, Slot and Binary aside (docs/fhir.md).
    expect([...e.byType.keys()].sort()).toEqual(
      [
        'Appointment',
        'Location',
        'Observation',
        'Organization',
        'Patient',
        'Practitioner',
        'Schedule',
        'Encounter',
        'DocumentReference',
        'AuditEvent',
      ].sort(),
    )
    expect(ids(e, 'Patient').sort()).toEqual([patientOf.A1, patientOf.A2].sort())
    expect(ids(e, 'Organization')).toEqual([String(a.companyId)])
    expect(e.text).not.toContain(patientOf.B1)
    // No line twice.
    for (const [type, list] of e.byType)
      expect({ type, n: new Set(list.map((r) => r.id)).size }).toEqual({ type, n: list.length })
    // The kick-off, the status and each download are on the access trail.
    const exportId = status.split('/').at(-1)!
    const files = m.output.map((f) => new URL(f.url).pathname)
    const trail = await waitForTrail(a, exportId, [new URL(status).pathname, ...files])
    expect(trail.filter((t) => files.includes(t.http.path)).every((t) => t.http.status === 200)).toBe(true)
  })

  it('refuses what it does not offer, naming it, as OperationOutcomes', async () => {
    const cases: Array<[string, { query?: string; prefer?: string }, number, string]> = [
      ['/$export', { prefer: '' }, 400, 'Prefer'],
      ['/$export', { query: '_typeFilter=Patient%3Fname%3Dx' }, 400, '_typeFilter'],
      ['/$export', { query: '_elements=id' }, 400, '_elements'],
      ['/$export', { query: '_type=Slot' }, 400, '_type'],
      ['/$export', { query: '_outputFormat=text/csv' }, 400, '_outputFormat'],
      ['/$export', { query: '_since=yesterday' }, 400, '_since'],
      ['/Patient/$export', { query: '_type=Practitioner' }, 400, '_type'],
      ['/Group/NOPE/$export', {}, 404, 'NOPE'],
    ]
    for (const [path, o, status, named] of cases) {
      const res = await kickoff(a.token, path, o)
      expect({ path, o, status: res.status }).toEqual({ path, o, status })
      expect(res.body.resourceType).toBe('OperationOutcome')
      expect(JSON.stringify(res.body)).toContain(named)
    }
    // fhir:export only for a token that names it; a type the token may not read is 403.
    const noExport = await tokenFor(a, '--scopes', 'patients:read')
    expect((await kickoff(noExport, '/$export')).status).toBe(403)
    const patientsOnly = await tokenFor(a, '--scopes', 'patients:read,fhir:export')
    const denied = await kickoff(patientsOnly, '/$export', { query: '_type=Patient,Observation' })
    expect(denied.status).toBe(403)
    expect(JSON.stringify(denied.body)).toContain('clinical:read')
    // Without _type: the types it may read (and the gateway's own).
    const own = await exportAll(patientsOnly)
    expect([...own.byType.keys()].sort()).toEqual(['Location', 'Organization', 'Patient'])
    // Another token of the company downloads only the files of types it may read.
    const clinical = await exportAll(a.token, '/$export', '_type=Patient,Observation')
    const [patients, observations] = ['Patient', 'Observation'].map(
      (t) => clinical.manifest.output.find((f) => f.type === t)!.url,
    )
    const as = (url: string) =>
      fetch(url, { headers: { 'x-service-token': patientsOnly } }).then((r) => r.status)
    expect({ patients: await as(patients!), observations: await as(observations!) }).toEqual({
      patients: 200,
      observations: 403,
    })
  })

  it('takes a POST with a Parameters resource', async () => {
    const k = await kickoff(a.token, '/Patient/$export', {
      post: {
        resourceType: 'Parameters',
        parameter: [
          { name: '_type', valueString: 'Patient,Encounter' },
          { name: '_outputFormat', valueString: 'application/fhir+ndjson' },
        ],
      },
    })
    expect(k.status).toBe(202)
    const done = await poll(k.headers.get('content-location')!, a.token)
    const e = await download(done.body as Manifest, a.token)
    expect([...e.byType.keys()].sort()).toEqual(['Encounter', 'Patient'])
  })
})

/** The access events of an export (its status and files), once each of `paths` is on the trail. */
async function waitForTrail(t: Tenant, id: string, paths: string[]) {
  for (let i = 0; i < 150; i++) {
    const res = await call('GET', `/audit/events?resource_type=fhir_export&resource_id=${id}&limit=100`, {
      token: t.token,
    })
    const events = (res.body.data ?? []) as Array<{ http: { path: string; status: number } }>
    if (paths.every((p) => events.some((e) => e.http.path === p))) return events
    await sleep(200)
  }
  throw new Error(`not every access of export ${id} is on the trail: ${paths.join(', ')}`)
}

/** A transaction on the stack's database begun now and left open: what an export must wait for. */
async function openTransaction(sqlText: string, params: unknown[]) {
  const db = new Pg({ connectionString: stack().env.DATABASE_URL })
  await db.connect()
  await db.query('BEGIN')
  await db.query(sqlText, params)
  return {
    commit: async () => {
      await db.query('COMMIT')
      await db.end()
    },
  }
}

/** Patients created and changed through the API by `loops` clients until stopped; each answer kept. */
function writer(tokens: string[]) {
  let stopped = false
  const acknowledged: Array<{ id: string; at: number; loop: number }> = []
  const loops = tokens.map(async (token, n) => {
    for (let i = 0; !stopped; i++) {
      const created = await call('POST', '/patients', {
        token,
        body: { first_name: `W${n}`, last_name: `Writer${i}`, birth_date: '1990-01-01', codalmacen: 'ALM1' },
      })
      if (created.status !== 201) throw new Error(`writer: ${created.status}`)
      acknowledged.push({ id: created.body.id, at: Date.now(), loop: n })
      // One of its patients made earlier, changed again: an export under way reads it as it was.
      const mine = acknowledged.filter((x) => x.loop === n)
      const older = mine[Math.floor(Math.random() * mine.length)]!
      const patched = await call('PATCH', `/patients/${older.id}`, {
        token,
        body: { first_name: `W${n}.${i}` },
      })
      if (patched.status !== 200) throw new Error(`writer: ${patched.status}`)
    }
  })
  return {
    acknowledged,
    stop: async () => {
      stopped = true
      await Promise.all(loops)
    },
  }
}

describe('exact increments', () => {
  it('waits for a transaction begun before transactionTime, so a change committed after it is in this export', async () => {
    const held = await openTransaction(
      `UPDATE patients.patients SET last_name = 'Held', version = version + 1,
              updated_at = date_trunc('milliseconds', now()) WHERE idempresa = $1 AND id = $2`,
      [a.companyId, patientOf.A1],
    )
    const k = await kickoff(a.token, '/$export', { query: '_type=Patient' })
    expect(k.status).toBe(202)
    const url = k.headers.get('content-location')!
    // It does not read while the older transaction is open.
    const running = await fetch(url, { headers: { 'x-service-token': a.token } })
    expect(running.status).toBe(202)
    expect(running.headers.get('x-progress')).toMatch(/waiting for transactions/)
    await held.commit()
    const done = await poll(url, a.token)
    const e = await download(done.body as Manifest, a.token)
    const patient = e.byType.get('Patient')!.find((r) => r.id === patientOf.A1) as Resource & {
      name: Array<{ family: string }>
      meta: { lastUpdated: string }
    }
    expect(patient.name[0]!.family).toBe('Held')
    expect(Date.parse(patient.meta.lastUpdated)).toBeLessThanOrEqual(Date.parse(done.body.transactionTime))
  })

  it('reads every page in one snapshot: a patient changed while the export runs is exported as it was', async () => {
    const t = snap
    // 15 pages (EXPORT_PAGE_SIZE in the e2e stack): pages after the first are read after the change
    // below; the changed patient is on the last (the same instant, greatest id).
    const n = 15 * Number(stack().env.EXPORT_PAGE_SIZE)
    const rows = await sql<{ id: string }>(
      `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date)
       SELECT $1, gen_random_uuid(), 'ALM1', 'Snap', 'Shot' || i, date '1970-01-01' + i
         FROM generate_series(1, $2::integer) i RETURNING id`,
      [t.companyId, n],
    )
    const last = rows
      .map((r) => r.id)
      .sort()
      .at(-1)!
    const k = await kickoff(t.token, '/$export', { query: '_type=Patient' })
    const url = k.headers.get('content-location')!
    for (let i = 0; i < 500; i++) {
      const s = await fetch(url, { headers: { 'x-service-token': t.token } })
      if (s.status !== 202 || /^[1-9]\d* resources/.test(s.headers.get('x-progress') ?? '')) break
      await sleep(10)
    }
    const patched = await call('PATCH', `/patients/${last}`, {
      token: t.token,
      body: { last_name: 'Changed' },
    })
    expect(patched.status).toBe(200)
    const e = await download((await poll(url, t.token)).body as Manifest, t.token)
    expect(ids(e, 'Patient').length).toBe(n)
    const exported = e.byType.get('Patient')!.find((r) => r.id === last) as Resource & {
      name: Array<{ family: string }>
    }
    expect({
      family: exported.name[0]!.family.startsWith('Shot'),
      version: exported.meta!.versionId,
    }).toEqual({
      family: true,
      version: '1',
    })
  })

  it('with a writer running through three exports: each in its window, every change in the chain once, none missed', async () => {
    // A company of its own: the writer's patients would be in the other tests' exports.
    const t = written
    const w = writer(await Promise.all([1, 2, 3, 4].map(() => tokenFor(t))))
    const chain: Exported[] = []
    let kicked = 0
    try {
      await sleep(1000)
      kicked = Date.now()
      chain.push(await exportAll(t.token, '/$export', '_type=Patient'))
      await sleep(500)
      chain.push(
        await exportAll(
          t.token,
          '/$export',
          `_type=Patient&_since=${encodeURIComponent(chain[0]!.manifest.transactionTime)}`,
        ),
      )
    } finally {
      await w.stop()
    }
    // After the writer: the last increment brings the chain to the present.
    chain.push(
      await exportAll(
        t.token,
        '/$export',
        `_type=Patient&_since=${encodeURIComponent(chain[1]!.manifest.transactionTime)}`,
      ),
    )
    const at = (r: Resource) => Date.parse(r.meta!.lastUpdated!)
    const seen = new Set<string>()
    const latest = new Map<string, string>()
    let since = -Infinity
    for (const e of chain) {
      const until = Date.parse(e.manifest.transactionTime)
      const list = e.byType.get('Patient') ?? []
      // Each in its window (since, transactionTime], no version twice in the chain.
      expect(list.filter((r) => !(at(r) > since && at(r) <= until))).toEqual([])
      for (const r of list) {
        const key = `${r.id}@${r.meta!.versionId}`
        expect(seen.has(key)).toBe(false)
        seen.add(key)
        latest.set(r.id!, r.meta!.versionId!)
      }
      since = until
    }
    expect(chain[1]!.byType.get('Patient')?.length ?? 0).toBeGreaterThan(0)
    // Every patient made before the first kick-off is in the first export, as it was at its
    // transactionTime (the snapshot its pages were all read in), unless changed after that time.
    const first = new Map((chain[0]!.byType.get('Patient') ?? []).map((r) => [r.id!, r]))
    const before = w.acknowledged.filter((x) => x.at < kicked).map((x) => x.id)
    expect(before.length).toBeGreaterThan(0)
    const t1 = Date.parse(chain[0]!.manifest.transactionTime)
    const changedSince = new Set(
      [...chain[1]!.byType.values(), ...chain[2]!.byType.values()]
        .flat()
        .filter((r) => at(r) > t1)
        .map((r) => r.id!),
    )
    expect(before.filter((id) => !first.has(id) && !changedSince.has(id))).toEqual([])
    // Every patient the writer was answered for, at its version now: none missed.
    const now = await call('GET', `/fhir/R4/Patient?_count=1000`, { token: t.token })
    const current = new Map(
      (now.body.entry as Array<{ resource: Resource }>).map((e) => [
        e.resource.id!,
        e.resource.meta!.versionId!,
      ]),
    )
    expect(current.size).toBe(w.acknowledged.length)
    expect(Object.fromEntries(latest)).toEqual(Object.fromEntries(current))
  })

  it('lists a document deleted since _since in `deleted`, not in the output', async () => {
    const doc = await post(a, '/documents', {
      patient_id: patientOf.A1,
      category: 'other',
      title: 'Borrar',
      file: SAMPLE_PNG,
    })
    const first = await exportAll(a.token, '/Patient/$export', '_type=DocumentReference')
    expect(ids(first, 'DocumentReference')).toContain(doc.id)
    expect((await call('DELETE', `/documents/${doc.id}`, { token: a.token })).status).toBe(204)
    const next = await exportAll(
      a.token,
      '/Patient/$export',
      `_type=DocumentReference&_since=${encodeURIComponent(first.manifest.transactionTime)}`,
    )
    expect(next.deletions).toEqual([`DocumentReference/${doc.id}`])
    expect(ids(next, 'DocumentReference')).not.toContain(doc.id)
  })
})

describe('tenancy', () => {
  it('gives each company its own, and a center its own Group, at every level', async () => {
    const theirs = await exportAll(b.token)
    expect(ids(theirs, 'Patient')).toEqual([patientOf.B1])
    expect(ids(theirs, 'Organization')).toEqual([String(b.companyId)])
    for (const id of [patientOf.A1, patientOf.A2]) expect(theirs.text).not.toContain(id)

    const alm1 = await tokenFor(a, '--centers', 'ALM1')
    for (const [path, level] of [
      ['/Group/ALM1/$export', 'group'],
      ['/$export', 'system'],
      ['/Patient/$export', 'patient'],
    ] as const) {
      const e = await exportAll(alm1, path)
      expect({ level, patients: ids(e, 'Patient') }).toEqual({ level, patients: [patientOf.A1] })
      expect({ level, leaks: e.text.includes(patientOf.A2!) || e.text.includes(patientOf.B1!) }).toEqual({
        level,
        leaks: false,
      })
      expect(e.byType.get('Location')?.map((l) => l.id) ?? []).toEqual(level === 'system' ? ['ALM1'] : [])
    }
    expect((await kickoff(alm1, '/Group/ALM2/$export')).status).toBe(403)
    // The full company's Group export by an unlimited token: that center only.
    const group2 = await exportAll(a.token, '/Group/ALM2/$export')
    expect(ids(group2, 'Patient')).toEqual([patientOf.A2])
    expect(group2.text).not.toContain(patientOf.A1)

    // Another company's, or a narrower token's, status and files are not found.
    const k = await kickoff(a.token, '/$export', { query: '_type=Patient' })
    const url = k.headers.get('content-location')!
    const done = await poll(url, a.token)
    const file = (done.body as Manifest).output[0]!.url
    for (const token of [b.token, alm1])
      for (const u of [url, file]) {
        const res = await fetch(u, { headers: { 'x-service-token': token } })
        expect({ u, status: res.status }).toEqual({ u, status: 404 })
      }
  })
})

describe('the export’s life', () => {
  it('a failed export (EXPORT_MAX_FAILURES runs in a row) answers 500 export_failed as an OperationOutcome with its reason, and another may start', async () => {
    const k = await kickoff(b.token, '/$export', { query: '_type=Patient' })
    const url = k.headers.get('content-location')!
    await poll(url, b.token)
    // As the job leaves an export that failed (services/gateway export-worker int test).
    await sql(
      `UPDATE identity.fhir_exports SET status = 'failed', error = 'Patient: the service answered 503'
        WHERE id = $1`,
      [url.split('/').at(-1)],
    )
    const res = await fetch(url, { headers: { 'x-service-token': b.token } })
    const body = (await res.json()) as { resourceType: string; issue: Array<{ diagnostics?: string }> }
    expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
      status: 500,
      type: expect.stringMatching(/^application\/fhir\+json/),
    })
    expect(body.resourceType).toBe('OperationOutcome')
    expect(JSON.stringify(body)).toContain('export_failed')
    expect(JSON.stringify(body)).toContain('Patient: the service answered 503')
    const next = await kickoff(b.token, '/$export', { query: '_type=Patient' })
    expect(next.status).toBe(202)
    expect((await poll(next.headers.get('content-location')!, b.token)).status).toBe(200)
  })

  it('is one at a time per company (429), cancelled by DELETE (then 404), and gone after retention', async () => {
    const held = await openTransaction('SELECT txid_current()', [])
    try {
      const k = await kickoff(a.token, '/$export', { query: '_type=Patient' })
      expect(k.status).toBe(202)
      const url = k.headers.get('content-location')!
      const again = await kickoff(a.token, '/$export')
      expect(again.status).toBe(429)
      expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(again.body).toMatchObject({ resourceType: 'OperationOutcome' })
      // Another company is not held up.
      const other = await kickoff(b.token, '/$export', { query: '_type=Patient' })
      expect(other.status).toBe(202)
      const del = await fetch(url, { method: 'DELETE', headers: { 'x-service-token': a.token } })
      expect(del.status).toBe(202)
      expect((await fetch(url, { headers: { 'x-service-token': a.token } })).status).toBe(404)
      await held.commit()
      await poll(other.headers.get('content-location')!, b.token)
    } finally {
      await held.commit().catch(() => undefined)
    }
    const e = await exportAll(a.token, '/$export', '_type=Patient')
    const status = e.manifest.output[0]!.url.replace(/\/\d+\.ndjson$/, '')
    moveGatewayClock(stack(), 25 * 3_600_000)
    try {
      for (const u of [status, e.manifest.output[0]!.url])
        expect((await fetch(u, { headers: { 'x-service-token': a.token } })).status).toBe(404)
    } finally {
      moveGatewayClock(stack(), 0)
    }
  })
})
