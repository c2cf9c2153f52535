// Type-checks the Kubernetes objects against the Kubernetes API types (kubernetes-types + tsc).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import YAML from 'yaml'
import { read, require, root } from './lib.mjs'

/** apiVersion -> module of kubernetes-types. */
const TYPES_MODULE = {
  v1: 'kubernetes-types/core/v1',
  'apps/v1': 'kubernetes-types/apps/v1',
  'batch/v1': 'kubernetes-types/batch/v1',
  'autoscaling/v2': 'kubernetes-types/autoscaling/v2',
  'policy/v1': 'kubernetes-types/policy/v1',
  'networking.k8s.io/v1': 'kubernetes-types/networking/v1',
}

export function loadDocs(file, problems) {
  try {
    return YAML.parseAllDocuments(read(file)).flatMap((d) => {
      if (d.errors.length) {
        problems.push(...d.errors.map((e) => `YAML: ${e.message}`))
        return []
      }
      const js = d.toJS()
      return js == null ? [] : [js]
    })
  } catch (err) {
    problems.push(`YAML: ${err.message}`)
    return []
  }
}

/**
 * Type-checks every object against the Kubernetes API types: each object becomes a typed constant in
 * its own .ts file, and tsc reports unknown fields (excess property checks), missing required fields
 * and wrong types. Returns problems keyed by "<Kind> <name>".
 */
export function typeCheck(objects) {
  const ts = require('typescript')
  // One directory per run: two checks at once (CI, a test) do not remove each other's files.
  const work = path.join(root, 'node_modules', '.cache', 'clinic-deploy-check', `types-${process.pid}`)
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  const byFile = new Map()
  const files = []
  objects.forEach(({ file, obj }, n) => {
    const key = file ?? `${obj?.kind} ${obj?.metadata?.name}`
    const mod = TYPES_MODULE[obj?.apiVersion]
    if (!mod) {
      byFile.set(key, [`apiVersion ${obj?.apiVersion} (${obj?.kind}) is not one this check knows`])
      return
    }
    const f = path.join(work, `m${n}.ts`)
    writeFileSync(
      f,
      `import type { ${obj.kind} } from '${mod}'\nexport const m: ${obj.kind} = ${JSON.stringify(obj, null, 2)}\n`,
    )
    files.push([f, key])
  })
  const program = ts.createProgram(
    files.map(([f]) => f),
    {
      strict: true,
      noEmit: true,
      types: [],
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      skipLibCheck: true,
    },
  )
  const keyOf = new Map(files.map(([f, k]) => [path.resolve(f), k]))
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const key = d.file ? keyOf.get(path.resolve(d.file.fileName)) : undefined
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : 0
    const near = d.file ? d.file.text.split('\n')[where].trim() : ''
    const msg = ts.flattenDiagnosticMessageText(d.messageText, ' ').replace(/\s+/g, ' ')
    const list = byFile.get(key ?? 'typescript') ?? []
    list.push(`${msg.slice(0, 300)}${near ? ` (at ${near.slice(0, 60)})` : ''}`)
    byFile.set(key ?? 'typescript', list)
  }
  rmSync(work, { recursive: true, force: true })
  return byFile
}
