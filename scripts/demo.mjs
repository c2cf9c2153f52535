// `npm run demo`: a demo company on the running stack (`npm start`) and a new API token, in one
// command. stdout is only the lines to paste (`eval "$(npm run -s demo)"`); messages go to stderr.
// Run again, it keeps what is there: company, centers and user; patients by their national id,
// appointments by their slot, Pablo's signed eye exam. Each run makes a new token (a token is shown
// only once), with every scope: signing a clinical record needs a token that names it.
// Settings: GATEWAY_URL (else http://127.0.0.1:$GATEWAY_PORT), DEMO_COMPANY_ID (9001), DEMO_USERNAME.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { loadDotEnv, root } from './lib.mjs'

loadDotEnv() // the same GATEWAY_PORT (and DATABASE_URL, for the admin CLI) as `npm start`
const company = process.env.DEMO_COMPANY_ID || '9001'
const username = process.env.DEMO_USERNAME || (company === '9001' ? 'demo' : `demo${company}`)
const gateway = process.env.GATEWAY_URL || `http://127.0.0.1:${process.env.GATEWAY_PORT || '8080'}`
const api = `${gateway.replace(/\/+$/, '')}/api`
const say = (line) => process.stderr.write(`${line}\n`)
const fail = (line) => (say(`demo: ${line}`), process.exit(1))

/** The admin CLI as README runs it; a usage error matching `exists` means the thing is already there. */
function admin(args, exists) {
  const cli = path.join(root, 'scripts', 'admin.mjs')
  const r = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const message = r.stderr.trim()
  if (r.status === 0) return (message && say(message), { out: r.stdout.trim(), message })
  if (r.status === 2 && exists?.test(message)) return say(`${args[0]}: ${message.match(exists)[0]}, using it`)
  fail(`admin ${args.join(' ')} failed: ${message || r.error?.message || `exit ${r.status}`}`)
}

let token
/** One call through the gateway; a POST with an Idempotency-Key, retried once if the stack is busy. */
async function call(method, url, body, key) {
  const headers = { 'x-service-token': token }
  if (body) Object.assign(headers, { 'content-type': 'application/json', 'idempotency-key': key })
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${api}${url}`, { method, headers, body: body && JSON.stringify(body) }).catch(
      (err) => fail(`${method} ${api}${url} failed: ${err.cause?.message ?? err.message}`),
    )
    const answer = { status: res.status, body: await res.json().catch(() => undefined) }
    if (res.status !== 503 || attempt === 2) return answer
    await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') || 1)))
  }
}
const refused = (what, a) =>
  fail(`${what} answered ${a.status}: ${a.body?.code ?? ''} ${a.body?.detail ?? JSON.stringify(a.body)}`)

try {
  const health = await fetch(`${api}/health`)
  if (!health.ok) say(`demo: ${api}/health answers ${health.status}; carrying on`)
} catch {
  fail(
    `the gateway is not reachable at ${api} (GATEWAY_URL / GATEWAY_PORT): start the stack with \`npm start\``,
  )
}

// Identity, with the admin CLI (the host system's administration area).
admin(['company:create', '--id', company, '--name', 'Clinica Demo'], /company \d+ already exists/)
const centerExists = /center \S+ already exists/
admin(['center:create', '--company', company, '--code', 'ALM1', '--name', 'Centro Norte'], centerExists)
admin(['center:create', '--company', company, '--code', 'ALM2', '--name', 'Centro Sur'], centerExists)
admin(['user:create', '--company', company, '--username', username], /username \S+ is taken/)
const created = admin(['token:create', '--username', username, '--name', 'demo', '--scopes', 'all'])
// Usernames are global: one taken in another company would give a token of that company.
if (!created.message.includes(`(company ${company}`))
  fail(`${username} is not a user of company ${company}: set DEMO_USERNAME`)
token = created.out

// Patients (obviously fake): fixed national ids, so a second run finds them (409 duplicate_national_id).
const patients = [
  {
    national_id: 'DEMO-0001',
    first_name: 'Pablo',
    last_name: 'Ruiz Demo',
    birth_date: '1975-09-30',
    codalmacen: 'ALM1',
    phone: '+34600000101',
    email: 'pablo@example.test',
  },
  {
    national_id: 'DEMO-0002',
    first_name: 'Lucia',
    last_name: 'Garcia Demo',
    birth_date: '2015-04-02',
    codalmacen: 'ALM1',
    requires_legal_guardian: true,
    guardian: {
      name: 'Marta Garcia Demo',
      relationship: 'mother',
      phone: '+34600000102',
      email: 'marta@example.test',
    },
  },
  {
    national_id: 'DEMO-0003',
    first_name: 'Ana',
    last_name: 'Martin Demo',
    birth_date: '1988-02-14',
    codalmacen: 'ALM2',
    phone: '+34600000103',
    language: 'ca',
  },
]
async function ensurePatient(p) {
  const name = `patient ${p.first_name} ${p.last_name} (${p.national_id})`
  const made = await call('POST', '/patients', p, `demo-patient-${p.national_id}`)
  if (made.status === 201) return (say(`${name} created`), made.body.id)
  if (made.body?.code !== 'duplicate_national_id') refused(`POST /patients for ${name}`, made)
  const found = await call('GET', `/patients?q=${encodeURIComponent(p.national_id)}`)
  const same = found.body?.data?.find((x) => x.national_id === p.national_id)
  if (!same) refused(`GET /patients?q=${p.national_id}`, found)
  return (say(`${name} already there`), same.id)
}
for (const p of patients) p.id = await ensurePatient(p)

// Appointments tomorrow (UTC date) at both centers with different practitioners: [patient, center,
// practitioner, from, to (UTC), reason]. 409 slot_conflict on the same slot: booked by an earlier run.
// DEMO_DAY (YYYY-MM-DD) pins the day, so two runs around midnight book the same slots.
const day = process.env.DEMO_DAY ?? new Date(Date.now() + 864e5).toISOString().slice(0, 10)
const appointments = [
  [patients[0], 'ALM1', 'dra-lopez', '08:00', '08:30', 'revision'],
  [patients[1], 'ALM1', 'dr-sanchez', '09:00', '09:20', 'vacuna'],
  [patients[2], 'ALM2', 'dra-ferrer', '10:00', '10:45', 'primera visita'],
]
for (const [patient, codalmacen, practitioner, from, to, reason] of appointments) {
  const [starts_at, ends_at] = [`${day}T${from}:00Z`, `${day}T${to}:00Z`]
  const body = { patient_id: patient.id, codalmacen, practitioner, starts_at, ends_at, reason }
  const name = `appointment ${starts_at} ${codalmacen} ${practitioner} (${patient.first_name})`
  const made = await call('POST', '/appointments', body, `demo-appointment-${patient.national_id}-${day}`)
  if (made.status === 201) say(`${name} booked`)
  else if (made.body?.code !== 'slot_conflict') refused(`POST /appointments for ${name}`, made)
  else {
    const query = new URLSearchParams({ patient_id: patient.id, practitioner, from: starts_at, to: ends_at })
    const found = await call('GET', `/appointments?${query}`)
    const same = found.body?.data?.some((a) => Date.parse(a.starts_at) === Date.parse(starts_at))
    say(same ? `${name} already booked` : `${name}: the slot is taken (${made.body.detail}); skipped`)
  }
}

// An eye exam of Pablo's, signed, with a finding of each kind (once: a later run finds it).
const pablo = patients[0]
const signed = await call('GET', `/clinical/exams?patient_id=${pablo.id}&status=signed&limit=1`)
if (signed.status !== 200) refused('GET /clinical/exams', signed)
if (signed.body.meta.total > 0) say(`a signed eye exam of ${pablo.first_name} already there`)
else {
  const exam = await call(
    'POST',
    '/clinical/exams',
    {
      patient_id: pablo.id,
      practitioner: 'dra-lopez',
      kind: 'follow_up',
      chief_complaint: 'control de glaucoma',
    },
    `demo-exam-${pablo.national_id}`,
  )
  if (exam.status !== 201) refused('POST /clinical/exams', exam)
  const measuredAt = new Date().toISOString()
  const findings = [
    ['visual-acuity', { eye: 'right', kind: 'best_corrected', value: '6/9', notation: 'snellen_m' }],
    ['visual-acuity', { eye: 'left', kind: 'best_corrected', value: '20/25', notation: 'snellen_ft' }],
    ['iop', { eye: 'right', mmhg: 23, method: 'goldmann', measured_at: measuredAt }],
    ['iop', { eye: 'left', mmhg: 18.5, method: 'goldmann', measured_at: measuredAt }],
    ['refraction', { eye: 'right', kind: 'manifest', sphere: -1.75, cylinder: -0.5, axis: 90 }],
    [
      'diagnoses',
      { code: 'H40.11', system: 'icd10cm', eye: 'right', status: 'suspected', display: 'glaucoma' },
    ],
  ]
  for (const [i, [kind, finding]] of findings.entries()) {
    const made = await call(
      'POST',
      `/clinical/exams/${exam.body.id}/${kind}`,
      finding,
      `demo-finding-${exam.body.id}-${i}`,
    )
    if (made.status !== 201) refused(`POST /clinical/exams/{id}/${kind}`, made)
  }
  const sign = await call('POST', `/clinical/exams/${exam.body.id}/sign`)
  if (sign.status !== 200) refused('POST /clinical/exams/{id}/sign', sign)
  say(`eye exam ${exam.body.id} of ${pablo.first_name} signed, with ${findings.length} findings`)
}

// A document and a granted consent for the first patient, each once (found again on a later run).
const [first] = patients
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
)
const documents = await call('GET', `/documents?patient_id=${first.id}&category=imaging`)
if (documents.status !== 200) refused('GET /documents', documents)
if (documents.body.meta.total) say(`a document of ${first.first_name} already there`)
else {
  const form = new FormData()
  form.set('patient_id', first.id)
  form.set('category', 'imaging')
  form.set('title', 'Retinografia (demo)')
  form.set('file', new Blob([PNG], { type: 'image/png' }), 'retinografia.png')
  const res = await fetch(`${api}/documents`, {
    method: 'POST',
    headers: { 'x-service-token': token },
    body: form,
  })
  const made = { status: res.status, body: await res.json().catch(() => undefined) }
  if (made.status !== 201) refused('POST /documents', made)
  say(`document ${made.body.filename} of ${first.first_name} uploaded (${made.body.content_type})`)
}
const key = 'cataract-surgery'
const templates = await call('GET', `/consents/templates?key=${key}&language=es`)
if (templates.status !== 200) refused('GET /consents/templates', templates)
if (!templates.body.meta.total) {
  const body = {
    key,
    language: 'es',
    title: 'Consentimiento informado: cirugia de cataratas',
    body: 'Se me ha explicado la cirugia de cataratas, sus riesgos y sus alternativas.\n\nAutorizo la intervencion.',
  }
  const made = await call('POST', '/consents/templates', body, 'demo-template-cataract')
  if (made.status !== 201) refused('POST /consents/templates', made)
  say(`consent template ${key} v${made.body.version} written`)
}
const granted = await call('GET', `/consents?patient_id=${first.id}&template_key=${key}&status=granted`)
if (granted.status !== 200) refused('GET /consents', granted)
if (granted.body.meta.total) say(`a granted consent of ${first.first_name} already there`)
else {
  const asked = await call(
    'POST',
    '/consents',
    { patient_id: first.id, template_key: key, send: false },
    `demo-consent-${day}`,
  )
  if (asked.status !== 201) refused('POST /consents', asked)
  const grant = { signer_role: asked.body.signer_role, signer_name: 'Tutora Demo', witness: 'Enfermera Demo' }
  const done = await call('POST', `/consents/${asked.body.id}/grant`, grant, `demo-grant-${day}`)
  if (done.status !== 200) refused(`POST /consents/${asked.body.id}/grant`, done)
  say(`consent ${key} of ${first.first_name} granted in person (its PDF: document ${done.body.document_id})`)
}

say(`a NEW token for ${username} (company ${company}): shown only this once; each run makes another`)
say('paste the two lines below, or run: eval "$(npm run -s demo)"')
say('then try: curl -s "$API/patients" -H "X-service-Token: $TOKEN"')
process.stdout.write(`export API=${api}\nexport TOKEN=${token}\n`)
