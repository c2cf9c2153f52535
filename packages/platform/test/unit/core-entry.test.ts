import { execFileSync } from 'node:child_process'
import path from 'node:path'

describe('@clinic/platform/core', () => {
  it('loads no framework, driver or logger (domain code imports it)', () => {
    // A fresh process, so nothing else this test file loaded counts. Runs the compiled entry
    // (`npm test` builds first); the sources are what tsc compiled.
    const entry = path.join(__dirname, '../../dist/entry/core.js')
    const loaded = execFileSync(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(entry)});` +
          'process.stdout.write(JSON.stringify(Object.keys(require.cache)))',
      ],
      { encoding: 'utf8' },
    )
    const heavy = (JSON.parse(loaded) as string[]).filter((f) =>
      /node_modules\/(fastify|knex|pg|amqplib|prom-client|pino|ajv)\//.test(f),
    )
    expect(heavy).toEqual([])
  })
})
