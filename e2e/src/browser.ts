import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium, type BrowserContext, type Page, type Response } from 'playwright-core'

/** Debian's Chromium, which scripts/ensure-chromium.mjs installs for `npm test`. */
export const CHROMIUM = '/usr/bin/chromium'
/** A phone's viewport. */
export const PHONE = { width: 390, height: 844 }

/**
 * Debian's Chromium driven by playwright-core (never a browser it downloads), headless, at a
 * phone's size, with a fresh profile and no traffic of its own (the machine's network is closed).
 * `close()` also removes the profile.
 */
export async function openBrowser(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run node scripts/ensure-chromium.mjs`)
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'clinic-e2e-chromium-'))
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: PHONE,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 30_000,
  })
  browser.setDefaultTimeout(15_000)
  return {
    browser,
    async close() {
      await browser.close()
      rmSync(userDataDir, { recursive: true, force: true })
    },
  }
}

export async function open(page: Page, url: string): Promise<Response> {
  const res = await page.goto(url)
  if (!res) throw new Error('no answer')
  return res
}

/** Presses the button and waits for the page the form's POST answers with. */
export async function press(page: Page, name: string): Promise<Response> {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/p/a/')),
    page.getByRole('button', { name, exact: true }).click(),
  ])
  await page.waitForLoadState()
  return res
}

export const heading = (page: Page) => page.locator('h1').innerText()
