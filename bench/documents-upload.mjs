// Uploads that stream (DESIGN.md section 15): ten parallel uploads of the largest file the service
// takes (DOCUMENTS_MAX_BYTES, 25 MiB) through the gateway, and the resident memory of the
// documents service and the gateway meanwhile (peak RSS, VmHWM of /proc). Target: documents stays
// under 200 MiB, i.e. no process holds a whole file, let alone ten.
// Each file is distinct (content addressing would otherwise store one), streamed by the client
// from a generator (the client holds no file either). Then one download of each, checked byte for
// byte against its sha256, with the same memory sampling.
// Run: node bench/documents-upload.mjs after `npm run build` (a database and a vhost of its own).
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { benchTenant, machine, record, startStack } from './lib.mjs'

const FILES = Number(process.env.FILES ?? 10)
const SIZE = Number(process.env.SIZE ?? 25 * 1024 * 1024)
const PIECE = 64 * 1024

const { env: base, token } = await benchTenant('clinic_bench_documents', {
  services: ['patients', 'documents'],
  centers: ['ALM1'],
})
const stack = await startStack(base, ['patients', 'documents'], {
  DOCUMENTS_LINK_SECRET: 'bench-documents-link-secret-0123456789abcdef',
  // PostgreSQL's 100 connections are shared with whatever else runs.
  DB_POOL_MAX: '4',
})
const { api, procs } = stack
const headers = { 'x-service-token': token }

const patient = await (
  await fetch(`${api}/patients`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({
      first_name: 'Nina',
      last_name: 'Ficticia',
      birth_date: '1960-03-01',
      codalmacen: 'ALM1',
    }),
  })
).json()

/** kB of a /proc/<pid>/status field (VmRSS now, VmHWM the peak so far). */
const statusKb = (pid, field) =>
  Number(
    new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0,
  )
const mib = (kb) => (kb / 1024).toFixed(1)
/** Samples VmRSS of the watched processes every 20 ms until stopped: the highest of each. */
function sampleRss() {
  const highest = { documents: 0, gateway: 0 }
  const timer = setInterval(() => {
    for (const name of Object.keys(highest))
      highest[name] = Math.max(highest[name], statusKb(procs[name].pid, 'VmRSS'))
  }, 20)
  return () => (clearInterval(timer), highest)
}

const PNG_HEAD = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b55', 'hex')
/** File `i`: a PNG signature and header, then SIZE bytes in all of a pattern of its own. */
function* fileBytes(i) {
  yield PNG_HEAD
  let left = SIZE - PNG_HEAD.length
  const piece = Buffer.alloc(PIECE)
  for (let n = 0; left > 0; n++) {
    piece.writeUInt32BE(i, 0)
    piece.writeUInt32BE(n, 4)
    piece.fill(i & 0xff, 8)
    const take = Math.min(left, PIECE)
    yield take === PIECE ? Buffer.from(piece) : piece.subarray(0, take)
    left -= take
  }
}

/** One upload as a browser sends it: multipart, streamed from the generator. */
async function upload(i) {
  const boundary = `----bench${i}${Date.now()}`
  const hash = createHash('sha256')
  const parts = (function* () {
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="patient_id"\r\n\r\n${patient.id}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="category"\r\n\r\nimaging\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="oct-${i}.png"\r\n` +
        'Content-Type: image/png\r\n\r\n',
    )
    for (const b of fileBytes(i)) {
      hash.update(b)
      yield b
    }
    yield Buffer.from(`\r\n--${boundary}--\r\n`)
  })()
  const body = new ReadableStream({
    pull(controller) {
      const next = parts.next()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
  })
  const started = Date.now()
  const res = await fetch(`${api}/documents`, {
    method: 'POST',
    headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: 'half',
  })
  const doc = await res.json()
  if (res.status !== 201) throw new Error(`upload ${i}: ${res.status} ${JSON.stringify(doc)}`)
  if (doc.sha256 !== hash.digest('hex') || doc.size_bytes !== SIZE)
    throw new Error(`upload ${i} stored other bytes`)
  return { id: doc.id, sha256: doc.sha256, seconds: (Date.now() - started) / 1000 }
}

async function download(doc) {
  const res = await fetch(`${api}/documents/${doc.id}/content`, { headers })
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of res.body) {
    hash.update(chunk)
    size += chunk.length
  }
  if (res.status !== 200 || size !== SIZE || hash.digest('hex') !== doc.sha256)
    throw new Error(`download of ${doc.id}: ${res.status}, ${size} bytes, another hash`)
}

const rssBefore = {
  documents: statusKb(procs.documents.pid, 'VmRSS'),
  gateway: statusKb(procs.gateway.pid, 'VmRSS'),
}
let stop = sampleRss()
const t0 = Date.now()
const docs = await Promise.all(Array.from({ length: FILES }, (_, i) => upload(i)))
const uploadS = (Date.now() - t0) / 1000
const uploadPeak = stop()
stop = sampleRss()
const t1 = Date.now()
await Promise.all(docs.map(download))
const downloadS = (Date.now() - t1) / 1000
const downloadPeak = stop()
const hwm = {
  documents: statusKb(procs.documents.pid, 'VmHWM'),
  gateway: statusKb(procs.gateway.pid, 'VmHWM'),
}
await stack.stop()

const mb = (FILES * SIZE) / 1024 / 1024
record(
  'documents-upload',
  `# Documents: ${FILES} parallel uploads of ${mib(SIZE / 1024)} MiB through the gateway

${machine()}. Target: the documents service under 200 MiB of RSS (DESIGN.md section 15: uploads
stream; no process holds a whole file).

| phase | MiB moved | seconds | MiB/s | documents peak RSS (MiB) | gateway peak RSS (MiB) |
| --- | ---: | ---: | ---: | ---: | ---: |
| idle, before | | | | ${mib(rssBefore.documents)} | ${mib(rssBefore.gateway)} |
| ${FILES} uploads at once | ${mb.toFixed(0)} | ${uploadS.toFixed(1)} | ${(mb / uploadS).toFixed(1)} | ${mib(uploadPeak.documents)} | ${mib(uploadPeak.gateway)} |
| ${FILES} downloads at once | ${mb.toFixed(0)} | ${downloadS.toFixed(1)} | ${(mb / downloadS).toFixed(1)} | ${mib(downloadPeak.documents)} | ${mib(downloadPeak.gateway)} |
| whole run (VmHWM) | | | | ${mib(hwm.documents)} | ${mib(hwm.gateway)} |

Every upload's sha256 and size were checked against what the client sent, every download byte for
byte. Slowest upload: ${Math.max(...docs.map((d) => d.seconds)).toFixed(1)} s.
`,
)
if (hwm.documents > 200 * 1024) {
  console.error(`documents peaked at ${mib(hwm.documents)} MiB: over the 200 MiB target`)
  process.exitCode = 1
}
