import { spawnSync } from 'node:child_process'
import path from 'node:path'

/**
 * The layering rule of eslint.config.mjs, run through ESLint's Node API as `eslint .` runs it, on
 * files placed where a domain file, a worker, a route, a composition root or a repository lives:
 * only db/ and the composition roots (app.ts, server.ts, cli/) may import a repository.
 */
const ROOT = path.resolve(__dirname, '../..')

// In a child process: ESLint loads eslint.config.mjs with import(), which Jest's module system
// refuses. Only the import rule runs, without type information: the probes are text at paths that
// hold no file, which the type-aware parser would look for in the TypeScript project.
const LINT = `
const { ESLint } = require('eslint')
const path = require('node:path')
const probes = JSON.parse(require('node:fs').readFileSync(0, 'utf8'))
const eslint = new ESLint({
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports' || ruleId === 'no-restricted-syntax',
  overrideConfig: { languageOptions: { parserOptions: { project: null } } },
})
Promise.all(probes.map(async ([file, source]) => {
  const [result] = await eslint.lintText(source, { filePath: path.resolve(file) })
  return result.messages.map((m) => (m.fatal ? 'fatal: ' : m.ruleId + ': ') + m.message)
})).then((r) => process.stdout.write(JSON.stringify(r)))
`

/** The messages of each `[file, source]`, linted as the file `file` (relative to the root). */
function lint(probes: Array<[string, string]>): string[][] {
  const run = spawnSync(process.execPath, ['-e', LINT], {
    cwd: ROOT,
    input: JSON.stringify(probes),
    encoding: 'utf8',
  })
  if (run.status !== 0) throw new Error(`eslint failed: ${run.stderr}`)
  return JSON.parse(run.stdout) as string[][]
}

const importOf = (from: string) => `import { thing } from '${from}'\nexport const used = thing\n`
const REFUSED = /^no-restricted-imports: .*Only db\/ and the composition roots/

const refused: Array<[string, string, string]> = [
  ['a domain file', 'services/comms/src/domain/probe.ts', '../db/repositories/messages-repository'],
  ['a worker', 'services/webhooks/src/delivery/probe.ts', '../db/repositories/worker-repository'],
  ['a consumer', 'services/audit/src/events/probe.ts', '../db/repositories/audit-events-repository'],
  ['a reminders module', 'services/comms/src/reminders/probe.ts', '../db/repositories'],
  ['a route', 'services/patients/src/routes/probe.ts', '../db/repositories/patients-repository.ts'],
  ['a top-level worker', 'services/comms/src/probe.ts', './db/repositories/delivery-repository'],
  ['a file beside db/', 'services/gateway/src/auth/probe.ts', '../db/identity-repository'],
]
const allowed: Array<[string, string, string]> = [
  ['app.ts', 'services/comms/src/app.ts', './db/repositories/reminders-repository'],
  ['server.ts', 'services/webhooks/src/server.ts', './db/repositories/worker-repository'],
  ['cli/', 'services/audit/src/cli/probe.ts', '../db/repositories/audit-events-repository'],
  ['another repository', 'services/comms/src/db/repositories/probe.ts', './messages-repository'],
  ['db/ outside repositories/', 'services/audit/src/db/probe.ts', './repositories/audit-events-repository'],
  ['a test', 'services/comms/test/int/probe.test.ts', '../../src/db/repositories/reminders-repository'],
  ['a worker, of its store interface', 'services/webhooks/src/delivery/probe.ts', './job-store'],
]
const DOMAIN_MIX = [
  "import knex from 'knex'",
  "import { buildApp } from '../../../../services/patients/src/app'",
  "import { x } from '../db/repositories/reminders-repository'",
  'export const all = [knex, buildApp, x]',
].join('\n')

// Libraries a domain reaches only through its ports, statically or at run time.
const DOMAIN_LIBRARIES: Array<[string, string]> = [
  ['jose', "import { jwtVerify } from 'jose'\nexport const used = jwtVerify\n"],
  ['pdf-lib', "import { PDFDocument } from 'pdf-lib'\nexport const used = PDFDocument\n"],
  ['fontkit', "import fontkit from '@pdf-lib/fontkit'\nexport const used = fontkit\n"],
  ['file-type', "import { fileTypeFromBuffer } from 'file-type'\nexport const used = fileTypeFromBuffer\n"],
  [
    'file-type/core',
    "import { fileTypeFromBuffer } from 'file-type/core'\nexport const used = fileTypeFromBuffer\n",
  ],
  ['knex', "import type { Knex } from 'knex'\nexport type Used = Knex\n"],
  ['import() of file-type', "export const load = () => import('file-type/core')\n"],
  ['import() of anything', 'export const load = (name: string) => import(name)\n'],
  ['require()', "export const load = () => require('pdf-lib')\n"],
]
const DOMAIN_FILE = 'services/documents/src/domain/probe.ts'
const ADAPTER_FILE = 'services/documents/src/adapters/probe.ts'
const ENQUEUE = "import { enqueueEvents } from '@clinic/platform/events'\nexport const used = enqueueEvents\n"
const ENQUEUE_ROOT = "import { enqueueEvents } from '@clinic/platform'\nexport const used = enqueueEvents\n"
const OUTBOX: Array<[string, string, string, boolean]> = [
  ['app.ts', 'services/documents/src/app.ts', ENQUEUE, false],
  ['a route', 'services/documents/src/routes/probe.ts', ENQUEUE_ROOT, false],
  ['a domain file', DOMAIN_FILE, ENQUEUE, false],
  ['a worker', 'services/documents/src/jobs/probe.ts', ENQUEUE, false],
  ['a repository', 'services/documents/src/db/repositories/probe.ts', ENQUEUE, true],
  ['db/', 'services/gateway/src/db/probe.ts', ENQUEUE_ROOT, true],
]

// Every probe in one run: each run loads the config and typescript-eslint again (about 2 s).
const results = new Map<string, string[]>()
beforeAll(() => {
  const probes: Array<[string, string]> = [...refused, ...allowed].map(([, file, from]) => [
    file,
    importOf(from),
  ])
  probes.push(['services/comms/src/domain/probe.ts', DOMAIN_MIX])
  for (const [, source] of DOMAIN_LIBRARIES) probes.push([DOMAIN_FILE, source], [ADAPTER_FILE, source])
  for (const [, file, source] of OUTBOX) probes.push([file, source])
  lint(probes).forEach((messages, i) => results.set(probes[i]!.join('\0'), messages))
})
const messagesOf = (file: string, source: string) => results.get(`${file}\0${source}`)!

describe('eslint: repositories are imported only by db/ and the composition roots', () => {
  it.each(refused)('refuses a repository import in %s', (_what, file, from) => {
    const messages = messagesOf(file, importOf(from))
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatch(REFUSED)
  })

  it.each(allowed)('allows the import in %s', (_what, file, from) => {
    expect(messagesOf(file, importOf(from))).toEqual([])
  })

  it('keeps the framework and cross-service rules in domain/ beside it', () => {
    const messages = messagesOf('services/comms/src/domain/probe.ts', DOMAIN_MIX)
    expect(messages).toHaveLength(3)
    expect(messages[0]).toMatch(/domain\/ stays free of frameworks and drivers/)
    expect(messages[1]).toMatch(/Services talk over HTTP or events, never imports/)
    expect(messages[2]).toMatch(REFUSED)
  })
})

describe('eslint: a domain reaches libraries only through its ports', () => {
  it.each(DOMAIN_LIBRARIES)('refuses %s in domain/', (_what, source) => {
    const messages = messagesOf(DOMAIN_FILE, source)
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatch(
      /^no-restricted-(imports: .*(through a port|free of frameworks and drivers)|syntax: domain\/ loads no module at run time)/,
    )
  })

  it.each(DOMAIN_LIBRARIES)('allows %s in an adapter outside domain/', (_what, source) => {
    expect(messagesOf(ADAPTER_FILE, source)).toEqual([])
  })
})

describe('eslint: only db/ writes the outbox', () => {
  it.each(OUTBOX)('enqueueEvents in %s', (_what, file, source, allowed) => {
    const messages = messagesOf(file, source)
    if (allowed) expect(messages).toEqual([])
    else {
      // In domain/, the platform entry is refused as well (domain/ imports @clinic/platform/core only).
      expect(messages).toContainEqual(
        expect.stringMatching(/^no-restricted-imports: .*Only db\/ writes the outbox/),
      )
    }
  })
})
