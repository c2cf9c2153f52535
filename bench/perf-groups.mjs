// Reads `perf script` output (stacks of CPU samples, node run with --perf-basic-prof so JS frames
// carry their file) and sums the samples per process and group: each sample goes to the first
// group one of its frames matches, from the leaf up (a syscall counts for the code that made it).
// Processes are named by the service whose build their frames run (services/<name>/dist).
// Usage: perf script -i perf.data -F pid,ip,sym,dso | node bench/perf-groups.mjs
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** [group, test on a frame's "symbol (dso)"], in the order tried on each frame. */
export const GROUPS = [
  [
    'JIT (V8 compilers)',
    /v8::internal::compiler|v8::internal::maglev|v8::internal::baseline|Builtins_CompileLazy|OptimizingCompileDispatcher/,
  ],
  ['GC', /Heap::|Scavenge|MarkCompact|Sweeper|ConcurrentMarking|Evacuat|GCTracer|MinorMC|IncrementalMarking/],
  ['logging (pino)', /node_modules\/\.pnpm\/(pino|sonic-boom|thread-stream)|logging\.js|request-log\.js/],
  [
    'crypto',
    /libcrypto|ossl_|ed25519|fe_mul|fe_sq|ge_|sha512_block|sha256_block|assertion-batch\.js|EVP_|SHA256|sha256|HMAC|Hmac|node::crypto|canonical-json\.js|event-signing\.js|assertion\.js|node_modules\/\.pnpm\/jose/,
  ],
  ['pg / knex', /node_modules\/\.pnpm\/(pg|pg-protocol|pg-pool|knex|tarn|pg-types|postgres-)/],
  ['proxy (undici, reply-from)', /node_modules\/\.pnpm\/(undici|@fastify\+reply-from|@fastify\+http-proxy)/],
  ['amqp', /node_modules\/\.pnpm\/amqplib/],
  ['JSON', /Json|JSON|fast-json-stringify|secure-json-parse/],
  ['validation (ajv, typebox)', /node_modules\/\.pnpm\/(ajv|@sinclair\+typebox)|validator/],
  [
    'sockets and streams (node)',
    /node:internal\/streams|node:net|stream_base_commons|node:_stream|uv__|epoll|writev|LibuvStreamWrap|TCPWrap/,
  ],
  [
    'http server (fastify, node:http)',
    /node_modules\/\.pnpm\/(fastify|find-my-way|avvio|@fastify)|_http_|llhttp|node:http|internal\/http|node::http/,
  ],
  ['our code', /\/(services|packages)\/[a-z-]+\/dist\//],
  ['node / libuv / V8 other', /./],
]

/**
 * The gateway's steps (bench/gateway.mjs PROFILE=1): a sample counts for the first frame from the
 * leaf up that is one of the gateway's steps (its module, or a library only that step calls), the
 * proxy or fastify: a library call, and a garbage collection an allocation starts, count for the
 * step that made them, and what a step's callback starts through fastify (the next hooks, the
 * forward, the answer's write) for fastify or the proxy. The last three: what none is under.
 */
export const STEP_GROUPS = [
  ['authentication (token cache)', /gateway\/dist\/(plugins\/authenticate|auth\/)/],
  ['per-address limit', /gateway\/dist\/(plugins\/address-limit|plugins\/window-counter|address-key)/],
  ['per-token rate limit (@fastify/rate-limit)', /@fastify\+rate-limit/],
  ['body guards', /gateway\/dist\/plugins\/body-guards/],
  [
    'scope and center checks',
    /gateway\/dist\/(plugins\/scopes|scopes|plugins\/centers)|platform\/dist\/centers/,
  ],
  [
    'assertion (claims, batch, Ed25519 sign)',
    /platform\/dist\/(assertion|assertion-batch)\.js|node_modules\/\.pnpm\/jose|libcrypto|ed25519|sha256_block|sha512_block/,
  ],
  [
    'access event (record, group commit, outbox, relay, publish)',
    /gateway\/dist\/(access-log|plugins\/access-events)|platform\/dist\/(group-commit|access-batch|events|outbox|amqp|wake-loop|listener)\.js|node_modules\/\.pnpm\/(pg|pg-protocol|pg-pool|knex|tarn|pg-types|postgres-|amqplib)/,
  ],
  [
    'headers (forwarded, answer, version, security)',
    /gateway\/dist\/(routes\/proxy|plugins\/response-headers)|platform\/dist\/http\/index\.js/,
  ],
  [
    'request id, logger, access line',
    /platform\/dist\/(logging|http\/request-log|http\/options)\.js|node_modules\/\.pnpm\/(pino|sonic-boom)/,
  ],
  ['metrics (prom-client)', /platform\/dist\/http\/metrics|node_modules\/\.pnpm\/prom-client/],
  [
    'platform checks (assertion hooks, route rules, text safety, problems), CORS',
    /platform\/dist\/(http\/(assertion-hooks|route-rules|text-safety|problems)|text)\.js|@fastify\+cors/,
  ],
  [
    'the proxy (reply-from, undici)',
    /@fastify\+reply-from|@fastify\+http-proxy|node_modules\/\.pnpm\/undici/,
  ],
  [
    'fastify (router, hooks, reply)',
    /node_modules\/\.pnpm\/(fastify|find-my-way|avvio|light-my-request|fast-json-stringify|@fastify\+)/,
  ],
  ['GC', /Heap::|Scavenge|MarkCompact|Sweeper|ConcurrentMarking|Evacuat|GCTracer|MinorMC|IncrementalMarking/],
  [
    'JIT (V8 compilers)',
    /v8::internal::compiler|v8::internal::maglev|v8::internal::baseline|Builtins_CompileLazy|OptimizingCompileDispatcher/,
  ],
  ['node:http, sockets, streams, timers, other', /./],
]

/** With `steps`, the first `steps` groups are looked for from the leaf up before any other (STEP_GROUPS). */
export async function summarise(input, groups = GROUPS, steps = 0) {
  const GROUPS = groups
  const stepGroups = groups.slice(0, steps)
  const other = GROUPS[GROUPS.length - 1][0]
  const perProcess = new Map()
  let frames = []
  let pid = null
  const flush = () => {
    if (pid === null) return
    const p = perProcess.get(pid) ?? { name: null, total: 0, kernel: 0, groups: new Map() }
    perProcess.set(pid, p)
    p.total++
    if (frames[0]?.includes('[kernel.kallsyms]')) p.kernel++
    p.name ??= /services\/([a-z-]+)\/dist\//.exec(frames.join('\n'))?.[1] ?? null
    const user = frames.filter((f) => !f.includes('[kernel.kallsyms]'))
    const group = user.length ? GROUPS.find(([, re]) => user.some((f) => re.test(f)))?.[0] : 'kernel only'
    // From the leaf up: the first frame that matches any group decides.
    let chosen = group
    const step = stepGroups.length
      ? user.map((f) => stepGroups.find(([, re]) => re.test(f))).find(Boolean)
      : undefined
    if (step) chosen = step[0]
    else
      for (const f of user) {
        const g = GROUPS.find(([, re]) => re.test(f))
        if (g && g[0] !== other) {
          chosen = g[0]
          break
        }
      }
    p.groups.set(chosen, (p.groups.get(chosen) ?? 0) + 1)
  }
  for await (const line of createInterface({ input })) {
    if (!line.trim()) {
      flush()
      frames = []
      pid = null
    } else if (!line.startsWith('\t'))
      pid = Number(line.trim().split(/\s+/)[0]) // a sample's header (pid, right-aligned)
    else frames.push(line.trim())
  }
  flush()
  return perProcess
}

/** One line per process: its samples and its groups' shares, largest first. */
export function describe(perProcess, top = 8) {
  return [...perProcess]
    .sort((a, b) => b[1].total - a[1].total)
    .slice(0, top)
    .map(([pid, p]) => {
      const parts = [...p.groups]
        .sort((a, b) => b[1] - a[1])
        .map(([g, n]) => `${g} ${((100 * n) / p.total).toFixed(0)}%`)
      return `${p.name ?? pid} (${p.total} samples): ${parts.join(', ')}`
    })
}

/**
 * `perf record` of these processes until stop(), which resolves to their summary (one string), or
 * with `raw` to summarise's map (for STEP_GROUPS: `groups` and `steps`).
 */
export function startPerf(pids, { raw = false, groups = GROUPS, steps = 0 } = {}) {
  const file = path.join(tmpdir(), `clinic-bench-${process.pid}-${Date.now()}.perf`)
  const rec = spawn('perf', ['record', '-q', '-F', '999', '-g', '-o', file, '-p', pids.join(',')], {
    stdio: 'ignore',
  })
  return {
    async stop() {
      const exited = new Promise((r) => rec.on('exit', r))
      rec.kill('SIGINT')
      await exited
      const script = spawn('perf', ['script', '-i', file, '-F', 'pid,ip,sym,dso'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      })
      const summary = await summarise(script.stdout, groups, steps)
      return raw ? summary : describe(summary).join('; ')
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  console.log(describe(await summarise(process.stdin)).join('\n'))
