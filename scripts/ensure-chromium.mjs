// Debian's Chromium, for the browser tests (e2e/test/patient-link.e2e.test.ts drives it with
// playwright-core, which downloads no browser). `npm test` calls this before Jest; run it by hand
// with `node scripts/ensure-chromium.mjs`. When /usr/bin/chromium is missing it is installed with
// apt-get (root on Debian, as CI is); anywhere else one line says what to install instead.
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Where Debian's chromium package puts the browser (the tests launch exactly this one). */
export const CHROMIUM = '/usr/bin/chromium'

function apt(args) {
  const r = spawnSync('apt-get', args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  if (r.status !== 0)
    throw new Error(`apt-get ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`)
}

/** True when Chromium is there (already, or installed now); false, with a warning, when it cannot be. */
export function ensureChromium() {
  if (existsSync(CHROMIUM)) return true
  const root = process.getuid?.() === 0
  if (!root || !existsSync('/usr/bin/apt-get')) {
    console.warn(
      `! ${CHROMIUM} is missing and cannot be installed here (needs root and apt-get): install Debian's ` +
        'chromium package, or the browser tests fail',
    )
    return false
  }
  console.log('> installing Chromium (apt-get install chromium)')
  // A fresh machine may have no package lists yet.
  apt(['update'])
  apt(['install', '-y', '--no-install-recommends', 'chromium'])
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is not there`)
  return true
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureChromium()
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
