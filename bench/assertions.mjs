// The assertion's own cost, CPU µs per request (the gateway signing it, the service checking it),
// alone and in batches, without the rest of the stack: what decides whether batching still pays.
// Alternates the builds named in ROOTS (comma-separated checkouts, default this one) in one
// process, ROUNDS times each, so a busy machine weighs on every build alike. Results: stdout and
// bench/results/assertions.md.
import { generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { ROOT } from './lib.mjs'

const roots = (process.env.ROOTS ?? ROOT).split(',')
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const REQUESTS = Number(process.env.REQUESTS ?? 4096)
const BATCHES = [1, 8, 64]

const { privateKey, publicKey } = generateKeyPairSync('ed25519')
const signer = { issuer: 'gateway', key: privateKey }
const claimsFor = (i) => ({
  companyId: 1,
  userId: '01a21afc-e806-70ac-b0fb-502d1713ecda',
  username: 'bench',
  tokenId: '01a21afc-f68e-7440-a8c7-a7c3e33d232a',
  companyCenters: ['C1', 'C2'],
  allowedCenters: null,
  aud: 'patients',
  requestId: `01a21afd-6c6c-7672-b6d0-${String(i).padStart(12, '0')}`,
  method: 'GET',
  path: `/patients/01a21afd-6c6c-7672-b6d0-${String(i).padStart(12, '0')}`,
  query: '',
  bodyHash: '',
})
const expectFor = (i) => ({ method: 'GET', path: claimsFor(i).path, audience: 'patients' })

const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** µs of CPU per request: `batch` = 0 signs each alone (signAssertion), else through the batcher. */
async function measure(p, batch) {
  const keys = new Map([['gateway', publicKey]]) // a service's key set: its cache of checked batches
  const batcher = batch ? new p.AssertionBatcher(signer) : null
  let signed = 0
  let checked = 0
  for (let i = 0; i < REQUESTS; i += batch || 1) {
    const n = Math.min(batch || 1, REQUESTS - i)
    let t = cpu()
    const tokens = batch
      ? await Promise.all(
          Array.from({ length: n }, (_, j) => p.signAssertionInBatch(claimsFor(i + j), signer, batcher)),
        )
      : [await p.signAssertion(claimsFor(i), signer)]
    signed += cpu() - t
    t = cpu()
    for (const [j, token] of tokens.entries()) {
      const r = await p.verifyAssertion(token, keys, expectFor(i + j))
      if (!r.ok) throw new Error(`refused: ${r.reason}`)
    }
    checked += cpu() - t
  }
  return { sign: signed / REQUESTS, verify: checked / REQUESTS }
}

const builds = roots.map((root) => ({
  root,
  p: createRequire(path.join(root, 'package.json'))(path.join(root, 'packages/platform/dist/index.js')),
  rows: new Map(),
}))
const cases = [0, ...BATCHES]
for (const b of builds) for (const c of cases) await measure(b.p, c) // warm-up
for (let round = 0; round < ROUNDS; round++)
  for (const b of builds)
    for (const c of cases) {
      const m = await measure(b.p, c)
      const list = b.rows.get(c) ?? []
      list.push(m)
      b.rows.set(c, list)
    }

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const f = (x) => x.toFixed(0)
const lines = [
  '# The assertion alone: CPU µs per request (sign in the gateway + check in the service)',
  '',
  `node ${process.version}, ${REQUESTS} requests per case, ${ROUNDS} rounds alternating the builds, medians (min-max of the sum).`,
  '',
  '| build | signed | sign µs | check µs | sum µs (min-max) |',
  '| --- | --- | ---: | ---: | ---: |',
]
for (const b of builds)
  for (const c of cases) {
    const ms = b.rows.get(c)
    const sums = ms.map((m) => m.sign + m.verify)
    lines.push(
      `| ${path.basename(b.root)} | ${c ? `batches of ${c}` : 'alone'} | ${f(median(ms.map((m) => m.sign)))} | ${f(median(ms.map((m) => m.verify)))} | ${f(median(sums))} (${f(Math.min(...sums))}-${f(Math.max(...sums))}) |`,
    )
  }
const out = lines.join('\n') + '\n'
process.stdout.write(out)
writeFileSync(path.join(ROOT, 'bench/results/assertions.md'), out)
