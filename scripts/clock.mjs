// `npm run clock -- +2d`: moves the clock of the comms service that `npm start` runs (reminders
// fall due, patient links expire) by an offset from real time: `+2d`, `+90m`, `+1h30m`, `-1h`, or
// milliseconds; `npm run clock -- 0` puts it back. It writes var/comms-clock (COMMS_CLOCK_FILE),
// which comms reads again when it changes; a production deployment refuses COMMS_CLOCK_FILE.
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { root } from './lib.mjs'

const offset = process.argv[2]
if (!offset || !/^([+-]?\d+|[+-]?(\d+(ms|s|m|h|d))+)$/.test(offset)) {
  console.error('usage: npm run clock -- <offset>   (e.g. +2d, +90m, +1h30m, -1h, 0)')
  process.exit(2)
}
const file = process.env.COMMS_CLOCK_FILE || path.join(root, 'var', 'comms-clock')
mkdirSync(path.dirname(file), { recursive: true })
writeFileSync(file, offset)
console.error(`comms' clock is now real time ${offset === '0' ? '' : offset} (${file})`)
