import { execFile } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { promisify } from 'node:util'
import { freePort } from '@clinic/platform/testing'
import { call, stack } from '../src/client'
import { ROOT } from '../src/stack'

const exec = promisify(execFile)
// makeTenant draws company ids from 100,000 up: below that, this file's company is its own.
const companyId = randomInt(10_000, 100_000)
/** Fixed for both runs (a run after midnight UTC would otherwise book the next day). */
const DAY = new Date(Date.now() + 864e5).toISOString().slice(0, 10)

/**
 * `npm run -s demo` as the README runs it (inside `eval`: its stdout must be only the two lines),
 * against the e2e stack: its admin CLI gets the stack's DATABASE_URL and secrets.
 */
async function demo(env: Record<string, string> = {}) {
  const { stdout, stderr } = await exec('npm', ['run', '-s', 'demo'], {
    cwd: ROOT,
    env: {
      NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      ...process.env,
      ...stack().env,
      GATEWAY_URL: stack().gatewayUrl,
      DEMO_COMPANY_ID: String(companyId),
      DEMO_DAY: DAY,
      ...env,
    },
  })
  const lines = stdout.trimEnd().split('\n')
  expect(lines).toEqual([
    expect.stringMatching(/^export API=\S+$/),
    expect.stringMatching(/^export TOKEN=csk_\S+$/),
  ])
  const [api, token] = lines.map((l) => l.slice(l.indexOf('=') + 1))
  return { api: api!, token: token!, stderr }
}

/** What the token sees: totals of patients and appointments, in all and at ALM2. */
async function totals(token: string) {
  const get = async (url: string) => {
    const res = await call('GET', url, { token })
    expect(res.status).toBe(200)
    return res.body
  }
  const patients = await get('/patients?limit=100')
  return {
    patients: patients.meta.total,
    minors: patients.data
      .filter((p: any) => p.requires_legal_guardian && p.guardian?.phone)
      .map((p: any) => p.first_name),
    appointments: (await get('/appointments')).meta.total,
    practitioners: new Set((await get('/appointments')).data.map((a: any) => a.practitioner)).size,
    atAlm2: [
      (await get('/patients?codalmacen=ALM2')).meta.total,
      (await get('/appointments?codalmacen=ALM2')).meta.total,
    ],
  }
}

describe('npm run -s demo', () => {
  it('gives a working token in one command, and a second run adds nothing but a new token', async () => {
    const first = await demo()
    expect(first.api).toBe(stack().api)
    expect(first.stderr).toMatch(/NEW token/)
    const expected = { patients: 3, minors: ['Lucia'], appointments: 3, practitioners: 3, atAlm2: [1, 1] }
    expect(await totals(first.token)).toEqual(expected)

    const second = await demo()
    expect(second.token).not.toBe(first.token)
    expect(second.stderr).toMatch(/company \d+ already exists/)
    expect(second.stderr).toMatch(/already there/)
    expect(second.stderr).toMatch(/already booked/)
    expect(await totals(second.token)).toEqual(expected)
    // The first run's token is not revoked by the second.
    expect((await call('GET', '/patients', { token: first.token })).status).toBe(200)
  })

  it('says in one line that the gateway is not reachable, and exits 1 with nothing on stdout', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`
    const failed = await demo({ GATEWAY_URL: dead }).then(
      () => undefined,
      (err: { code: number; stdout: string; stderr: string }) => err,
    )
    expect(failed).toMatchObject({ code: 1, stdout: '' })
    expect(failed!.stderr.trim().split('\n')).toEqual([
      expect.stringContaining(`not reachable at ${dead}/api`),
    ])
  })
})
