import { fhirProblems, walkFhirSearch } from '@clinic/platform/testing'
import type { Appointment } from '../../src/schemas/appointment'
import { companyOf, startApp, type Company, type Harness } from '../helpers'

/**
 * FHIR R4 Practitioner, Schedule, Slot and Appointment (DESIGN.md section 19; README "FHIR"):
 * read and search, every declared parameter, paging, the center and company limits, and every
 * answer through the two third-party validators (fhirProblems).
 */

// A fixed clock: Sunday 2031-03-02; the Mondays after are 03-03 and 03-10 (UTC throughout).
const NOW = new Date('2031-03-02T00:00:00.000Z')
let h: Harness
beforeAll(async () => {
  h = await startApp({ clock: () => NOW })
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
type Bundle = Json & { total: number; link: Array<{ relation: string; url: string }>; entry?: Json[] }

async function fhir(c: Company, url: string, status = 200): Promise<Json> {
  const res = await c.send('GET', url)
  if (res.statusCode !== status) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  expect(res.headers['content-type']).toMatch(/^application\/fhir\+json/)
  const body = res.json() as Json
  expect(fhirProblems(body)).toEqual([])
  return body
}
const search = (c: Company, url: string) => fhir(c, url) as Promise<Bundle>
const ids = (b: Bundle) => (b.entry ?? []).map((e) => e.resource.id as string)
const sorted = (xs: string[]) => [...xs].sort()

/** Follows the `next` links to the end: every id, in order. */
const walk = (c: Company, url: string) => walkFhirSearch((u) => c.send('GET', u), url)

const LONG = 'dra-maria-del-carmen-fernandez-gutierrez-de-la-vega' // 51 characters
const at = (day: number, hour: number, minute = 0) =>
  new Date(Date.UTC(2031, 2, day, hour, minute)).toISOString()

describe('FHIR R4 Practitioner, Schedule, Slot, Appointment', () => {
  let c: Company
  let other: Company
  let limited: Company
  const a: Record<string, Appointment> = {}
  let patient: string

  beforeAll(async () => {
    c = companyOf(h, { companyCenters: ['ALM1', 'ALM2', 'ALM_3'] })
    other = companyOf(h)
    limited = companyOf(h, {
      companyId: c.principal.companyId,
      companyCenters: ['ALM1', 'ALM2', 'ALM_3'],
      allowedCenters: ['ALM2'],
    })
    const practitioner = async (co: Company, body: Json) => {
      const res = await co.send('POST', '/practitioners', { time_zone: 'UTC', slot_minutes: 30, ...body })
      if (res.statusCode !== 201) throw new Error(`practitioner: ${res.statusCode} ${res.body}`)
    }
    await practitioner(c, {
      id: 'dra-uno',
      name: 'Dra. Uno Ficticia',
      working_hours: [
        { codalmacen: 'ALM1', weekday: 1, start: '09:00', end: '11:00' },
        { codalmacen: 'ALM2', weekday: 2, start: '09:00', end: '10:00' },
      ],
    })
    await practitioner(c, {
      id: 'dr-dos',
      name: 'Dr. Dos Ficticio',
      working_hours: [{ codalmacen: 'ALM2', weekday: 1, start: '09:00', end: '10:00' }],
    })
    await practitioner(c, {
      id: LONG,
      name: 'Dra. Larga Ficticia',
      working_hours: [{ codalmacen: 'ALM_3', weekday: 1, start: '12:00', end: '13:00' }],
    })
    await practitioner(other, {
      id: 'dra-uno',
      name: 'Dra. Otra Empresa',
      working_hours: [{ codalmacen: 'ALM1', weekday: 1, start: '09:00', end: '11:00' }],
    })

    patient = c.newPatient()
    const book = (o: Json) => c.book({ practitioner: 'dra-uno', ...o })
    a.scheduled = await book({ patient_id: patient, starts_at: at(3, 9, 30), ends_at: at(3, 10) })
    a.confirmed = await book({
      practitioner: 'dr-dos',
      codalmacen: 'ALM2',
      starts_at: at(3, 9),
      ends_at: at(3, 9, 30),
    })
    a.cancelled = await book({ patient_id: patient, starts_at: at(10, 10), ends_at: at(10, 10, 30) })
    a.completed = await book({ practitioner: 'Dr. Libre', starts_at: at(4, 16), ends_at: at(4, 16, 20) })
    a.noshow = await book({ starts_at: at(10, 9), ends_at: at(10, 9, 30) })
    a.checkedin = await book({
      practitioner: LONG,
      codalmacen: 'ALM_3',
      starts_at: at(3, 12, 30),
      ends_at: at(3, 13),
    })
    const patch = async (x: Appointment, body: Json) => {
      const res = await c.send('PATCH', `/appointments/${x.id}`, body)
      if (res.statusCode !== 200) throw new Error(`patch: ${res.statusCode} ${res.body}`)
    }
    await patch(a.confirmed!, { status: 'confirmed' })
    await patch(a.cancelled!, { status: 'cancelled', cancellation_reason: 'aviso ficticio' })
    await c.send('POST', `/appointments/${a.completed!.id}/checkin`)
    await patch(a.completed!, { status: 'completed' })
    await patch(a.noshow!, { status: 'no_show' })
    await c.send('POST', `/appointments/${a.checkedin!.id}/checkin`)
    await other.book({ practitioner: 'dra-uno', starts_at: at(3, 9), ends_at: at(3, 9, 30) })
    // A live hold (the clock stands still): busy like an appointment.
    const hold = await c.send('POST', '/appointments/holds', {
      practitioner: 'dra-uno',
      codalmacen: 'ALM1',
      starts_at: at(3, 10, 30),
      ends_at: at(3, 11),
    })
    if (hold.statusCode !== 201) throw new Error(`hold: ${hold.statusCode} ${hold.body}`)
  })

  describe('Practitioner', () => {
    test('read: id, version, last update, name, active; ETag', async () => {
      const res = await c.send('GET', '/fhir/R4/Practitioner/dra-uno')
      expect(res.statusCode).toBe(200)
      const p = res.json()
      expect(p).toEqual({
        resourceType: 'Practitioner',
        id: 'dra-uno',
        meta: { versionId: '1', lastUpdated: expect.any(String) },
        active: true,
        name: [{ text: 'Dra. Uno Ficticia' }],
      })
      expect(res.headers.etag).toBe('W/"1"')
      expect(fhirProblems(p)).toEqual([])
    })

    test('search: all, _id, _lastUpdated, _sort', async () => {
      const all = await search(c, '/fhir/R4/Practitioner')
      expect(all.total).toBe(3)
      expect(sorted(ids(all))).toEqual(sorted(['dra-uno', 'dr-dos', LONG]))
      expect(ids(await search(c, '/fhir/R4/Practitioner?_id=dr-dos,nadie'))).toEqual(['dr-dos'])
      const times = all.entry!.map((e) => e.resource.meta.lastUpdated as string)
      const last = await search(c, `/fhir/R4/Practitioner?_lastUpdated=ge${times[2]}`)
      expect(ids(last)).toEqual([ids(all)[2]])
      expect(ids(await search(c, `/fhir/R4/Practitioner?_lastUpdated=lt${times[0]}`))).toEqual([])
      expect(ids(await search(c, '/fhir/R4/Practitioner?_sort=-_lastUpdated'))).toEqual(
        [...ids(all)].reverse(),
      )
    })
  })

  describe('Schedule', () => {
    test('read: one practitioner at one center, actors, hours', async () => {
      const s = await fhir(c, '/fhir/R4/Schedule/dra-uno.ALM1')
      expect(s).toEqual({
        resourceType: 'Schedule',
        id: 'dra-uno.ALM1',
        meta: { versionId: '1', lastUpdated: expect.any(String) },
        active: true,
        actor: [
          { reference: 'Practitioner/dra-uno', display: 'Dra. Uno Ficticia' },
          { reference: 'Location/ALM1' },
        ],
        comment: 'Working hours (UTC, slots of 30 min): Mon 09:00-11:00',
      })
    })

    test('search: one per practitioner and center; a long slug and a center with _ still give a FHIR id', async () => {
      const all = await search(c, '/fhir/R4/Schedule')
      expect(all.total).toBe(4)
      const long = ids(all).find((id) => id.endsWith('.ALM.3'))!
      expect(long).toMatch(/^dra-maria-del-carmenX[0-9a-f]{11}\.ALM\.3$/)
      expect(sorted(ids(all))).toEqual(sorted(['dra-uno.ALM1', 'dra-uno.ALM2', 'dr-dos.ALM2', long]))
      const read = await fhir(c, `/fhir/R4/Schedule/${long}`)
      expect(read.actor).toEqual([
        { reference: `Practitioner/${LONG}`, display: 'Dra. Larga Ficticia' },
        { reference: 'Location/ALM.3' },
      ])
      expect(ids(await search(c, '/fhir/R4/Schedule?_id=dra-uno.ALM2'))).toEqual(['dra-uno.ALM2'])
      expect((await search(c, '/fhir/R4/Schedule?_lastUpdated=gt2100-01-01')).total).toBe(0)
      const desc = await search(c, '/fhir/R4/Schedule?_sort=-_lastUpdated')
      expect(desc.entry!.map((e) => e.resource.meta.lastUpdated)).toEqual(
        all.entry!.map((e) => e.resource.meta.lastUpdated).reverse(),
      )
    })
  })

  describe('Slot', () => {
    const monday = '/fhir/R4/Slot?schedule=Schedule/dra-uno.ALM1&start=ge2031-03-03&start=lt2031-03-04'

    test('a day of a schedule: the grid, free or busy (appointment, hold); ids read back', async () => {
      const b = await search(c, monday)
      const slots = b.entry!.map((e) => e.resource).sort((x, y) => x.start.localeCompare(y.start))
      expect(slots.map((s) => [s.id, s.status, s.start, s.end])).toEqual([
        ['dra-uno.ALM1.20310303T0900Z', 'free', at(3, 9), at(3, 9, 30)],
        ['dra-uno.ALM1.20310303T0930Z', 'busy', at(3, 9, 30), at(3, 10)],
        ['dra-uno.ALM1.20310303T1000Z', 'free', at(3, 10), at(3, 10, 30)],
        ['dra-uno.ALM1.20310303T1030Z', 'busy', at(3, 10, 30), at(3, 11)],
      ])
      expect(b.total).toBe(4)
      for (const s of slots) {
        expect(s.schedule).toEqual({ reference: 'Schedule/dra-uno.ALM1' })
        expect(await fhir(c, `/fhir/R4/Slot/${s.id}`)).toEqual(s)
      }
    })

    test('status, start (one instant, eq), schedule alternatives', async () => {
      expect(ids(await search(c, `${monday}&status=free`))).toHaveLength(2)
      expect(ids(await search(c, `${monday}&status=busy`))).toHaveLength(2)
      expect(ids(await search(c, `${monday}&status=http://hl7.org/fhir/slotstatus|busy,free`))).toHaveLength(
        4,
      )
      expect(ids(await search(c, `${monday}&status=busy-unavailable`))).toEqual([])
      expect(ids(await search(c, `/fhir/R4/Slot?start=${encodeURIComponent(at(3, 10))}`))).toEqual([
        'dra-uno.ALM1.20310303T1000Z',
      ])
      const both = await search(
        c,
        '/fhir/R4/Slot?schedule=dra-uno.ALM1,Schedule/dr-dos.ALM2&start=ge2031-03-03&start=lt2031-03-04',
      )
      // dr-dos at ALM2 on Monday: 09:00 busy (confirmed), 09:30 free.
      expect(both.total).toBe(6)
    })

    test('no start: the next 14 days from now; _id alone reads its own stretch; past free slots are none', async () => {
      const all = await search(c, '/fhir/R4/Slot?schedule=dra-uno.ALM2')
      // Tuesdays 03-04 and 03-11, two slots each.
      expect(sorted(ids(all))).toEqual([
        'dra-uno.ALM2.20310304T0900Z',
        'dra-uno.ALM2.20310304T0930Z',
        'dra-uno.ALM2.20310311T0900Z',
        'dra-uno.ALM2.20310311T0930Z',
      ])
      expect(
        ids(
          await search(c, '/fhir/R4/Slot?_id=dra-uno.ALM2.20310311T0930Z,dra-uno.ALM1.20310303T0930Z'),
        ).sort(),
      ).toEqual(['dra-uno.ALM1.20310303T0930Z', 'dra-uno.ALM2.20310311T0930Z'])
      expect((await search(c, '/fhir/R4/Slot?start=lt2031-03-01')).total).toBe(0)
      const wide = await c.send('GET', '/fhir/R4/Slot?start=ge2031-03-01&start=lt2031-06-01')
      expect(wide.statusCode).toBe(400)
      expect(wide.json().resourceType).toBe('OperationOutcome')
    })

    test('the long slug schedule: its busy slot (checked in) and its id within 64 characters', async () => {
      const b = await search(c, '/fhir/R4/Slot?start=ge2031-03-03T12:00:00Z&start=lt2031-03-03T13:00:00Z')
      const long = b
        .entry!.map((e) => e.resource)
        .filter((s) => s.schedule.reference.endsWith('.ALM.3'))
        .sort((x, y) => x.start.localeCompare(y.start))
      expect(long.map((s) => [s.status, s.start])).toEqual([
        ['free', at(3, 12)],
        ['busy', at(3, 12, 30)],
      ])
      for (const s of long) {
        expect(s.id.length).toBeLessThanOrEqual(64)
        expect((await fhir(c, `/fhir/R4/Slot/${s.id}`)).id).toBe(s.id)
      }
    })

    test('paging through next links: every slot once', async () => {
      const all = await search(c, '/fhir/R4/Slot?_count=1000')
      const walked = await walk(c, '/fhir/R4/Slot?_count=3')
      expect(walked.ids).toHaveLength(all.total)
      expect(new Set(walked.ids).size).toBe(all.total)
      expect(sorted(walked.ids)).toEqual(sorted(ids(all)))
      expect(walked.pages).toBe(Math.ceil(all.total / 3))
    })

    test('_sort=-_lastUpdated and _lastUpdated: a busy slot is as recent as its claim', async () => {
      const all = await search(c, '/fhir/R4/Slot?_count=1000')
      const desc = await walk(c, '/fhir/R4/Slot?_count=7&_sort=-_lastUpdated')
      expect(desc.ids).toEqual([...ids(all)].reverse())
      // The hold was the last thing written: its slot is the most recent one.
      const latest = all.entry!.at(-1)!.resource
      expect(latest.id).toBe('dra-uno.ALM1.20310303T1030Z')
      const since = await search(c, `/fhir/R4/Slot?_lastUpdated=ge${latest.meta.lastUpdated}`)
      expect(ids(since)).toEqual([latest.id])
    })
  })

  describe('Appointment', () => {
    test('read: status, participants with status, start and end, reason', async () => {
      const x = await fhir(c, `/fhir/R4/Appointment/${a.scheduled!.id}`)
      expect(x).toEqual({
        resourceType: 'Appointment',
        id: a.scheduled!.id,
        meta: { versionId: '1', lastUpdated: a.scheduled!.updated_at },
        status: 'booked',
        reasonCode: [{ text: 'revision de prueba' }],
        start: at(3, 9, 30),
        end: at(3, 10),
        created: a.scheduled!.created_at,
        participant: [
          { actor: { reference: `Patient/${patient}` }, required: 'required', status: 'needs-action' },
          {
            actor: { reference: 'Practitioner/dra-uno', display: 'Dra. Uno Ficticia' },
            required: 'required',
            status: 'accepted',
          },
          { actor: { reference: 'Location/ALM1' }, required: 'required', status: 'accepted' },
        ],
      })
      const free = await fhir(c, `/fhir/R4/Appointment/${a.completed!.id}`)
      expect(free.status).toBe('fulfilled')
      expect(free.participant[1].actor).toEqual({ display: 'Dr. Libre' })
      const cancelled = await fhir(c, `/fhir/R4/Appointment/${a.cancelled!.id}`)
      expect(cancelled.cancelationReason).toEqual({ text: 'aviso ficticio' })
    })

    test('status: each FHIR code and ours', async () => {
      const status = async (q: string) => sorted(ids(await search(c, `/fhir/R4/Appointment?status=${q}`)))
      expect(await status('booked')).toEqual(sorted([a.scheduled!.id, a.confirmed!.id]))
      expect(await status('checked-in')).toEqual([a.checkedin!.id])
      expect(await status('fulfilled')).toEqual([a.completed!.id])
      expect(await status('cancelled')).toEqual([a.cancelled!.id])
      expect(await status('noshow')).toEqual([a.noshow!.id])
      expect(await status('http://hl7.org/fhir/appointmentstatus|noshow,cancelled')).toEqual(
        sorted([a.noshow!.id, a.cancelled!.id]),
      )
      expect(await status('proposed')).toEqual([])
      expect(await status('other-system|booked')).toEqual([])
    })

    test('patient, practitioner, location, date', async () => {
      const q = async (query: string) => sorted(ids(await search(c, `/fhir/R4/Appointment?${query}`)))
      expect(await q(`patient=Patient/${patient}`)).toEqual(sorted([a.scheduled!.id, a.cancelled!.id]))
      expect(await q(`patient=${patient}`)).toEqual(sorted([a.scheduled!.id, a.cancelled!.id]))
      expect(await q('patient=not-a-uuid')).toEqual([])
      expect(await q('practitioner=Practitioner/dr-dos')).toEqual([a.confirmed!.id])
      expect(await q(`practitioner=dr-dos,${LONG}`)).toEqual(sorted([a.confirmed!.id, a.checkedin!.id]))
      expect(await q('location=Location/ALM2')).toEqual([a.confirmed!.id])
      expect(await q('date=2031-03-10')).toEqual(sorted([a.cancelled!.id, a.noshow!.id]))
      expect(await q(`date=ge2031-03-04&date=lt2031-03-10`)).toEqual([a.completed!.id])
      expect(await q(`date=${encodeURIComponent(at(3, 9, 30))}`)).toEqual([a.scheduled!.id])
      expect(await q(`patient=${patient}&date=gt2031-03-03`)).toEqual([a.cancelled!.id])
    })

    test('paging through next links, _sort=-_lastUpdated, _lastUpdated, _id', async () => {
      const all = await search(c, '/fhir/R4/Appointment')
      expect(all.total).toBe(6)
      const walked = await walk(c, '/fhir/R4/Appointment?_count=2')
      expect(walked.ids).toEqual(ids(all))
      expect(walked.pages).toBe(3)
      const desc = await walk(c, '/fhir/R4/Appointment?_count=4&_sort=-_lastUpdated')
      expect(desc.ids).toEqual([...ids(all)].reverse())
      const times = all.entry!.map((e) => e.resource.meta.lastUpdated as string)
      expect(ids(await search(c, `/fhir/R4/Appointment?_lastUpdated=ge${times[3]}`))).toEqual(
        ids(all).slice(3),
      )
      expect(ids(await search(c, `/fhir/R4/Appointment?_id=${a.noshow!.id}`))).toEqual([a.noshow!.id])
      expect((await search(c, '/fhir/R4/Appointment?_count=0')).total).toBe(6)
    })
  })

  describe('errors and limits', () => {
    test('an unknown parameter or modifier: 400 OperationOutcome', async () => {
      for (const url of [
        '/fhir/R4/Appointment?foo=1',
        '/fhir/R4/Slot?patient=x',
        '/fhir/R4/Practitioner?name=Uno',
        '/fhir/R4/Schedule?actor=Practitioner/dra-uno',
        '/fhir/R4/Appointment?status:not=booked',
      ]) {
        const body = await fhir(c, url, 400)
        expect(body.resourceType).toBe('OperationOutcome')
      }
    })

    test("an unknown id and another company's: 404 OperationOutcome", async () => {
      const theirs = await other.send('GET', '/fhir/R4/Appointment?_count=1')
      const theirId = theirs.json().entry[0].resource.id
      expect((await fhir(other, '/fhir/R4/Practitioner/dra-uno')).name).toEqual([
        { text: 'Dra. Otra Empresa' },
      ])
      for (const url of [
        `/fhir/R4/Appointment/${theirId}`,
        '/fhir/R4/Appointment/0190c5a0-0000-7000-8000-0000000000ff',
        '/fhir/R4/Appointment/nope',
        '/fhir/R4/Practitioner/nadie',
        '/fhir/R4/Schedule/dra-uno.ALM9',
        '/fhir/R4/Slot/dra-uno.ALM1.20310303T0915Z',
        '/fhir/R4/Slot/dra-uno.ALM1',
      ]) {
        const body = await fhir(c, url, 404)
        expect(body.resourceType).toBe('OperationOutcome')
      }
      // The other company's own practitioner of the same slug is not ours: ours answered above.
      expect((await search(other, '/fhir/R4/Appointment')).total).toBe(1)
    })

    test('a token limited to a center sees nothing of another center', async () => {
      expect(sorted(ids(await search(limited, '/fhir/R4/Practitioner')))).toEqual(['dr-dos', 'dra-uno'])
      expect((await fhir(limited, `/fhir/R4/Practitioner/${LONG}`, 404)).resourceType).toBe(
        'OperationOutcome',
      )
      expect(sorted(ids(await search(limited, '/fhir/R4/Schedule')))).toEqual(['dr-dos.ALM2', 'dra-uno.ALM2'])
      await fhir(limited, '/fhir/R4/Schedule/dra-uno.ALM1', 404)
      const slots = await search(limited, '/fhir/R4/Slot?_count=1000')
      expect(slots.entry!.every((e) => e.resource.schedule.reference.endsWith('.ALM2'))).toBe(true)
      await fhir(limited, '/fhir/R4/Slot/dra-uno.ALM1.20310303T0900Z', 404)
      expect(ids(await search(limited, '/fhir/R4/Appointment'))).toEqual([a.confirmed!.id])
      expect(ids(await search(limited, '/fhir/R4/Appointment?location=ALM1'))).toEqual([])
      await fhir(limited, `/fhir/R4/Appointment/${a.scheduled!.id}`, 404)
    })
  })
})
