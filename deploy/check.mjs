// Offline checks of the deployment files: no Docker engine, no cluster, no network (kubectl is
// installed from the Debian packages when missing). Run through deploy/check.sh. Prints one line per
// file checked ("ok" or "FAIL" with the reasons) and exits 1 if any check failed.
//
//   generated files             (also networkpolicy.yaml, rabbitmq/definitions.json) match what `node scripts/generate.mjs` makes of packages/platform/services.json
//   checks/dockerfile.mjs       Dockerfile, .dockerignore
//   checks/compose.mjs          deploy/compose/compose.yaml (+ checks/compose-env.mjs: .env.example)
//   checks/k8s.mjs              deploy/k8s via `kubectl kustomize` (+ checks/k8s-rules.mjs: API types, rules)
//   checks/comms-delivery.mjs   both: comms' providers required, never COMMS_DELIVERY=files
//   checks/rabbitmq.mjs         deploy/rabbitmq/definitions.json: a broker user per service, topic permissions
//
//   node deploy/check.mjs [generated] [dockerfile] [compose] [k8s] [rabbitmq]   only those (default: all)
import { stale } from '../scripts/generate.mjs'
import { checkEnvExample } from './checks/compose-env.mjs'
import { checkCompose } from './checks/compose.mjs'
import { checkDockerfile, checkDockerignore, checkOtherDockerfiles } from './checks/dockerfile.mjs'
import { checkK8s } from './checks/k8s.mjs'
import { checkRabbitDefinitions } from './checks/rabbitmq.mjs'
import { report, state, unmarkedSecrets } from './checks/lib.mjs'

const CHECKS = {
  generated: async () => {
    const outdated = await stale()
    report(
      'generated files',
      outdated.map((f) => `${f} differs from what services.json makes: run node scripts/generate.mjs`),
      'tsconfig.json, .env.example, Compose, Kubernetes and the broker definitions match packages/platform/services.json',
    )
  },
  dockerfile: () => {
    checkDockerfile()
    checkDockerignore()
    checkOtherDockerfiles()
  },
  compose: () => {
    checkCompose()
    checkEnvExample()
  },
  k8s: checkK8s,
  rabbitmq: checkRabbitDefinitions,
}
const wanted = process.argv.slice(2)
for (const w of wanted)
  if (!CHECKS[w]) {
    console.error(`unknown check ${w}: one of ${Object.keys(CHECKS).join(', ')}`)
    process.exit(2)
  }
for (const [name, run] of Object.entries(CHECKS)) if (!wanted.length || wanted.includes(name)) await run()
// Every secret a service reads is declared `secret: true`, so start-up refuses a placeholder.
if (!wanted.length)
  report(
    'services/*/src/config.ts',
    unmarkedSecrets().map((n) => `${n} is not declared v.*({ secret: true }): a placeholder would start`),
    "every secret refuses the examples' placeholders at start-up",
  )
if (state.failed) {
  console.log(`deploy checks: ${state.failed} file(s) failed`)
  process.exit(1)
}
console.log('deploy checks: all passed')
