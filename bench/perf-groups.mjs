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

export async function summarise(input) {
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
    for (const f of user) {
      const g = GROUPS.find(([, re]) => re.test(f))
      if (g && g[0] !== 'node / libuv / V8 other') {
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

/** `perf record` of these processes until stop(), which resolves to their summary (one string). */
export function startPerf(pids) {
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
      return describe(await summarise(script.stdout)).join('; ')
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  console.log(describe(await summarise(process.stdin)).join('\n'))
