// `node scripts/pnpm.mjs <args>`: runs the project's pinned pnpm, installing it through npx if needed.
import { pnpm } from './lib.mjs'
try {
  pnpm(process.argv.slice(2))
} catch (err) {
  console.error(err.message)
  process.exit(1)
}
