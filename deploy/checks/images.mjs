// Images pinned by digest. A third-party image (Compose, Kubernetes, a Dockerfile's FROM) is
// `name:tag@sha256:<64 hex>`: the tag says what it is, the digest is what Docker pulls, whatever the
// tag points at later. Exempt: the images built here from the repository's Dockerfile (Compose
// services with a `build:` section, image clinic/<name>:${TAG}; in Kubernetes clinic/<name>, which
// kustomization.yaml `images:` points at the registry and the CalVer release).
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { rel, root } from './lib.mjs'

/** Why `image` is not `name:tag@sha256:<64 hex>`, or null when it is. */
export function pinProblem(image) {
  const text = String(image ?? '')
  const [ref, digest, ...more] = text.split('@')
  if (!digest || more.length) return `image ${text} is not pinned by digest (name:tag@sha256:<64 hex>)`
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return `image ${text}: the digest is not sha256:<64 hex>`
  if (!/^[^:]+:[\w][\w.-]{0,127}$/.test(ref.split('/').pop()))
    return `image ${text}: no tag before the digest (name:tag@sha256:...)`
  return null
}

/** The name and tag of a pinned image (`rabbitmq:4.3.6-management`), without its digest. */
export const tagOf = (image) => String(image ?? '').split('@')[0]

const SKIP = new Set(['node_modules', '.git', 'dist', 'var', 'coverage'])

/** Every Dockerfile of the repository (Dockerfile, Dockerfile.*, *.Dockerfile), outside node_modules. */
export function dockerfiles(dir = root) {
  const out = []
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue
    const p = path.join(dir, e.name)
    if (e.isDirectory()) out.push(...dockerfiles(p))
    else if (/^Dockerfile(\..+)?$|\.Dockerfile$/.test(e.name)) out.push(rel(p))
  }
  return out.sort()
}
