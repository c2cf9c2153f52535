// A Docker engine for the container suites (deploy/images, e2e through Testcontainers), the way
// ensure-chromium.mjs provides the browser. When an engine answers, it is used as it is. When none
// answers and this runs as root on Debian, Debian's docker.io (and docker-compose, debootstrap for
// the stand-in images) are installed when missing and dockerd is started: storage driver overlay2
// where the machine can mount an overlay (tried first), else vfs, which copies every layer whole
// and is several times slower; --iptables=false; its data in /var/lib/docker, the engine's usual
// machine-wide place, so images built once serve every later clone and run.
// `stop()` stops the engine again when this started it. By hand: `node scripts/ensure-docker.mjs`
// (it leaves the engine running).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The server's version when an engine answers, else null. */
export function engineVersion() {
  const r = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], {
    encoding: 'utf8',
    timeout: 10_000,
  })
  return r.status === 0 ? r.stdout.trim() : null
}

/** `docker compose` when the plugin is there, else Debian's `docker-compose` (1.29); null if neither. */
export function composeCommand() {
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0)
    return ['docker', 'compose']
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0) return ['docker-compose']
  return null
}

function apt(args) {
  const r = spawnSync('apt-get', args, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  if (r.status !== 0)
    throw new Error(`apt-get ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`)
}

const has = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0

/**
 * An engine that answers: { version, started, stop() }, or null (with a warning) where none can be
 * had (not root, not Debian): the suites then say they ran without one.
 */
export async function ensureDocker({ log = console.log } = {}) {
  const version = engineVersion()
  if (version) {
    if (!composeCommand() && canInstall()) installPackages(['docker-compose'], log)
    return { version, started: false, stop: () => {} }
  }
  if (!canInstall()) {
    console.warn('! no Docker engine answers and none can be installed here (needs root and apt-get)')
    return null
  }
  const missing = [
    ['dockerd', 'docker.io'],
    ['docker-compose', 'docker-compose'],
    ['debootstrap', 'debootstrap'],
  ]
    .filter(([bin]) => !has(bin))
    .map(([, pkg]) => pkg)
  if (missing.length) installPackages(missing, log)
  const driver = overlayWorks() ? 'overlay2' : 'vfs'
  log(`> starting dockerd (storage driver ${driver}, --iptables=false, data in /var/lib/docker)`)
  mkdirSync('/var/log', { recursive: true })
  const out = openSync('/var/log/clinic-dockerd.log', 'a')
  const daemon = spawn('dockerd', [`--storage-driver=${driver}`, '--iptables=false'], {
    detached: true,
    stdio: ['ignore', out, out],
  })
  daemon.unref()
  const deadline = Date.now() + 60_000
  let answered = null
  while (!(answered = engineVersion())) {
    if (daemon.exitCode !== null) throw new Error('dockerd exited at start: see /var/log/clinic-dockerd.log')
    if (Date.now() > deadline)
      throw new Error('dockerd did not answer within 60 s: see /var/log/clinic-dockerd.log')
    await new Promise((r) => setTimeout(r, 500))
  }
  return {
    version: answered,
    started: true,
    stop: () => {
      log('> stopping the dockerd this run started')
      try {
        process.kill(daemon.pid, 'SIGTERM')
      } catch {
        return
      }
      // dockerd stops its containers first; wait for it (bounded) so the next run starts clean.
      spawnSync('sh', [
        '-c',
        `for i in $(seq 1 60); do kill -0 ${daemon.pid} 2>/dev/null || exit 0; sleep 0.5; done`,
      ])
    },
  }
}

/** True when an overlay mounts here (root, and a kernel and sandbox that allow it). */
function overlayWorks() {
  const dir = mkdtempSync(path.join(tmpdir(), 'clinic-overlay-'))
  try {
    for (const d of ['lower', 'upper', 'work', 'merged']) mkdirSync(path.join(dir, d))
    const o = `lowerdir=${dir}/lower,upperdir=${dir}/upper,workdir=${dir}/work`
    const mounted = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', o, `${dir}/merged`], {
      stdio: 'ignore',
    })
    if (mounted.status !== 0) return false
    spawnSync('umount', [`${dir}/merged`], { stdio: 'ignore' })
    return true
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function canInstall() {
  return process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')
}

function installPackages(pkgs, log) {
  log(`> installing ${pkgs.join(', ')} (apt-get)`)
  apt(['update'])
  apt(['install', '-y', '--no-install-recommends', ...pkgs])
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const engine = await ensureDocker()
    if (!engine) process.exit(1)
    console.log(`Docker engine ${engine.version}${engine.started ? ' (started now)' : ''}`)
    execFileSync('docker', ['info', '--format', 'storage driver {{.Driver}}, data in {{.DockerRootDir}}'], {
      stdio: 'inherit',
    })
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
