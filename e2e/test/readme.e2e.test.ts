import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { freePort } from '@clinic/platform/testing'
import { ROOT, startStack, stopStack, type StackInfo } from '../src/stack'

/**
 * The README as a newcomer pastes it: every `sh` block from "First steps" to "Configuration", in
 * order, in one bash, against a stack of this file's own (the blocks move comms' clock and make
 * company 7, which no other suite may share). Each block must run to its end with no command
 * failing (`set -e`), use no placeholder, send no request with a gap where an id should be, and
 * get no 5xx. The README is read as it is; the one thing changed is the receiver's port (4000
 * there), which another process on a test machine may hold.
 */

interface Block {
  heading: string
  code: string
}

/** The `sh` blocks between two level-2 headings, each with the heading it is under. */
export function shBlocks(readme: string, from: string, to: string): Block[] {
  const lines = readme.split('\n')
  const start = lines.indexOf(`## ${from}`)
  const end = lines.indexOf(`## ${to}`)
  if (start < 0 || end < start) throw new Error(`README: no "## ${from}" before "## ${to}"`)
  const blocks: Block[] = []
  let heading = from
  let code: string[] | undefined
  for (const line of lines.slice(start, end)) {
    if (code && line === '```') {
      blocks.push({ heading, code: code.join('\n') })
      code = undefined
    } else if (code) code.push(line)
    else if (line === '```sh') code = []
    else if (/^#{2,4} /.test(line)) heading = line.replace(/^#+ /, '')
  }
  return blocks
}

/** `<its id>`, `<delivery id>`, `<meta.next>`: what a newcomer would have to fill in by hand. */
const PLACEHOLDER = /<[a-z][^<>\n]*>/i
/** The code of a block without its comments (whole lines, and after a command). */
const withoutComments = (code: string) =>
  code
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .map((l) => l.replace(/\s+#\s.*$/, ''))
    .join('\n')

/**
 * Runs before the blocks: stops at the first failing command, naming the block, and wraps curl so
 * that a request whose URL or body has a gap (an empty or `undefined` id) fails instead of
 * answering a quiet 404, and every request carries an id the gateway's log can be searched for.
 */
const PRELUDE = `
set -euo pipefail
trap 'echo "README block $README_BLOCK failed at: $BASH_COMMAND" >&2' ERR
curl() {
  local a
  for a in "$@"; do
    if [[ $a == *undefined* || $a == *'""'* ||
      ( $a == http* && ( \${a#*://*/} == *//* || $a == *= || $a == *=\\&* || $a == *'<'* ) ) ]]; then
      echo "README block $README_BLOCK: a gap in a curl argument: $a" >&2
      return 97
    fi
  done
  command curl -H "X-Request-Id: readme-$README_BLOCK-$RANDOM$RANDOM" "$@"
}
`

/** The longest a block may run (a few seconds on a quiet machine; minutes at a load of 20). */
const BLOCK_MS = 120_000

let info: StackInfo
let work: string
beforeAll(async () => {
  info = await startStack()
  work = mkdtempSync(path.join(os.tmpdir(), 'clinic-readme-'))
}, 120_000)
afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true })
  if (info) await stopStack(info)
}, 60_000)

/**
 * bash on `script` in the repository root, killed with everything it started when a block runs
 * longer than `blockMs` (the time restarts at each `README block N done`): a bound per block, so
 * that the README may grow and a busy machine's pace is allowed to every block alike.
 */
function bash(script: string, env: Record<string, string>, blockMs: number) {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn('bash', [script], { cwd: ROOT, env, detached: true })
    let out = ''
    let err = ''
    const stalled = () => {
      err += `\n(killed: a block ran longer than ${blockMs} ms)`
      killAll()
    }
    let timer = setTimeout(stalled, blockMs)
    let blocksDone = 0
    child.stdout.on('data', (c) => {
      out += c
      // Counted over the whole output: a line may arrive in two chunks.
      const now = out.match(/^README block \d+ done$/gm)?.length ?? 0
      if (now > blocksDone) {
        blocksDone = now
        clearTimeout(timer)
        timer = setTimeout(stalled, blockMs)
      }
    })
    child.stderr.on('data', (c) => (err += c))
    const killAll = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        /* the group is gone */
      }
    }
    child.on('close', (code) => {
      clearTimeout(timer)
      killAll() // a background job a failed block left behind (the webhook receiver)
      resolve({ code, out, err })
    })
  })
}

describe('README', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const blocks = shBlocks(readme, 'First steps', 'Configuration')

  it('has blocks for every area, none with a placeholder to fill in', () => {
    const headings = new Set(blocks.map((b) => b.heading))
    for (const area of ['First steps', 'Patients', 'Appointments', 'Communications', 'Audit'])
      expect(headings).toContain(area)
    expect(headings).toContain('Reminders, consent and patient links')
    expect(headings).toContain('Webhooks and the change feed')
    expect(headings).toContain('Documents and consents')
    for (const b of blocks)
      expect([b.heading, withoutComments(b.code).match(PLACEHOLDER)?.[0]]).toEqual([b.heading, undefined])
  })

  it(
    'pastes: every block, in order in one shell, runs to its end against a running stack',
    async () => {
      const receiverPort = await freePort()
      const files = blocks.map((b, i) => {
        const file = path.join(work, `block-${i + 1}.sh`)
        writeFileSync(file, b.code.replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`))
        return file
      })
      const script = path.join(work, 'readme.sh')
      writeFileSync(
        script,
        PRELUDE +
          files
            .map((f, i) => `README_BLOCK=${i + 1}\nsource ${f}\nprintf '\\nREADME block ${i + 1} done\\n'\n`)
            .join(''),
      )
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        ...info.env,
        GATEWAY_URL: info.gatewayUrl,
        PORT: String(receiverPort), // the example receiver's port
        NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      }
      delete env.API
      delete env.TOKEN
      const run = await bash(script, env, BLOCK_MS)
      const done = [...run.out.matchAll(/^README block (\d+) done$/gm)].length
      const failed = blocks[done]
      if (run.code !== 0 || done !== blocks.length)
        throw new Error(
          `README block ${done + 1} (${failed?.heading}) did not run to its end (exit ${run.code}):\n` +
            `${run.err.slice(-3000)}\n--- stdout ---\n${run.out.slice(-3000)}`,
        )

      // What a newcomer would read as a sign that something is missing.
      expect(run.out).not.toMatch(/undefined/)
      expect(run.err).not.toMatch(/curl: \(|refused:/)
      // The receiver got the change the README says it prints, verified with the secret it was given.
      expect(run.out).toMatch(/ appointment\.updated \/api\/appointments\/[0-9a-f-]{36} \[ 'notes' \]/)

      // Every request reached the gateway, and none was a 5xx.
      const answers = readFileSync(info.logFiles.gateway!, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"readme-'))
        .map((l) => JSON.parse(l) as { request_id: string; status?: number; msg: string })
        .filter((l) => l.request_id.startsWith('readme-') && l.status !== undefined)
      expect(answers.length).toBeGreaterThan(60)
      expect(answers.filter((a) => a.status! >= 500)).toEqual([])
    },
    (blocks.length + 1) * BLOCK_MS,
  )
})
