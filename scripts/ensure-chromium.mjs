// Debian's packages the tests run: Chromium for the browser tests (e2e/test/patient-link.e2e.test.ts
// and documents.e2e.test.ts drive it with playwright-core, which downloads no browser), and
// poppler-utils for documents' consent PDF tests (pdftotext reads the text back, pdftoppm renders a
// page). `npm test` calls this before Jest; run it by hand with `node scripts/ensure-chromium.mjs`.
// What is missing is installed with apt-get (root on Debian, as CI is), all in one go; anywhere else
// one line says what to install instead.
import { existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Where Debian's chromium package puts the browser (the tests launch exactly this one). */
export const CHROMIUM = '/usr/bin/chromium'

/** Each Debian package the tests need, by a file it installs (present: nothing to do). */
export const TEST_PACKAGES = [
  { file: CHROMIUM, pkg: 'chromium', for: 'the browser tests' },
  { file: '/usr/bin/pdftotext', pkg: 'poppler-utils', for: "documents' consent PDF tests" },
  { file: '/usr/bin/pdftoppm', pkg: 'poppler-utils', for: "documents' consent PDF tests" },
]

function apt(args) {
  const r = spawnSync('apt-get', args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  })
  if (r.status !== 0)
    throw new Error(`apt-get ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`)
}

/** True when every test package is there (already, or installed now); false, with a warning, when not. */
export function ensureTestPackages() {
  const missing = TEST_PACKAGES.filter((t) => !existsSync(t.file))
  if (!missing.length) return true
  const pkgs = [...new Set(missing.map((t) => t.pkg))]
  const root = process.getuid?.() === 0
  if (!root || !existsSync('/usr/bin/apt-get')) {
    for (const t of missing)
      console.warn(
        `! ${t.file} is missing and cannot be installed here (needs root and apt-get): install Debian's ` +
          `${t.pkg} package, or ${t.for} fail`,
      )
    return false
  }
  console.log(`> installing ${pkgs.join(', ')} (apt-get install)`)
  // A fresh machine may have no package lists yet.
  apt(['update'])
  apt(['install', '-y', '--no-install-recommends', ...pkgs])
  const still = missing.filter((t) => !existsSync(t.file))
  if (still.length)
    throw new Error(
      `apt-get installed ${pkgs.join(', ')}, but ${still.map((t) => t.file).join(', ')} is not there`,
    )
  return true
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureTestPackages()
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
