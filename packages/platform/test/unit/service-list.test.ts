import { readFileSync } from 'node:fs'
import path from 'node:path'
import {
  ConfigError,
  eventContracts,
  loadConfig,
  parseServiceList,
  serviceList,
  servicePort,
  serviceUrl,
  ServiceListError,
  type ServiceList,
  v,
} from '@clinic/platform'

const text = readFileSync(path.join(__dirname, '../../services.json'), 'utf8')
/** services.json with one change applied to a fresh copy. */
const changed = (edit: (list: ServiceList) => void) => {
  const list = JSON.parse(text) as ServiceList
  edit(list)
  return JSON.stringify(list)
}
const problemOf = (json: string): string => {
  try {
    parseServiceList(json)
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceListError)
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error('expected a ServiceListError')
}

describe('services.json, as the platform reads it', () => {
  it('takes the committed list', () => {
    expect(parseServiceList(text).services.map((s) => s.name)).toEqual(
      JSON.parse(text).services.map((s: { name: string }) => s.name),
    )
  })

  it.each([
    [
      'a name that is not lowercase words',
      (l: ServiceList) => (l.services[0]!.name = 'Bad_Name'),
      /name "Bad_Name"/,
    ],
    [
      'a port that is no port',
      (l: ServiceList) => (l.services[1]!.port = '8082' as unknown as number),
      /appointments needs a port/,
    ],
    [
      'a port listed twice',
      (l: ServiceList) => (l.services[1]!.port = l.services[0]!.port),
      /port 8081 is listed twice/,
    ],
    [
      'a service listed twice',
      (l: ServiceList) => l.services.push({ ...l.services[0]!, port: 9999 }),
      /patients is listed twice/,
    ],
    ['no families', (l: ServiceList) => (l.services[0]!.families = {}), /patients needs families/],
    [
      'a family listed twice',
      (l: ServiceList) => l.planned.push({ family: 'patients', area: 'patients', resource_type: 'patient' }),
      /family patients is listed twice/,
    ],
    [
      'a webhook outside its families',
      (l: ServiceList) => (l.services[2]!.webhooks = ['/x/y']),
      /webhook \/x\/y of comms/,
    ],
    [
      'a body limit that is not bytes',
      (l: ServiceList) => (l.services[2]!.body_limits = { '/comms/send': 0 }),
      /body limit/,
    ],
    [
      'a page inside the API',
      (l: ServiceList) => (l.services[2]!.pages = ['/api/']),
      /page \/api\/ of comms/,
    ],
    ['a call to no service', (l: ServiceList) => (l.services[1]!.calls = ['billing']), /calls billing/],
    [
      'an event type its contracts file does not declare',
      (l: ServiceList) => l.services[0]!.publishes!.push('patient.merged'),
      /patients publishes patient\.merged, which packages\/platform\/src\/contracts\/patients\.ts does not declare/,
    ],
    [
      'a declared event type left out of publishes',
      (l: ServiceList) => l.services[0]!.publishes!.pop(),
      /patients does not list patient\.updated of its contracts file/,
    ],
    [
      'a scope that is no <area>:<verb>',
      (l: ServiceList) => l.services[0]!.scopes!.push('Patients-Read'),
      /patients: scopes must list <area>:<verb> names/,
    ],
    [
      'a scope declared twice',
      (l: ServiceList) => l.services[1]!.scopes!.push('patients:read'),
      /the scope patients:read is declared twice/,
    ],
    [
      'a named-only scope not its own',
      (l: ServiceList) => (l.services[0]!.named_only_scopes = ['clinical:sign']),
      /patients: named_only_scopes must be among its scopes/,
    ],
    [
      'a FHIR type read with a scope nobody declares',
      (l: ServiceList) => (l.services[0]!.fhir = { Patient: 'patients:admin' }),
      /the FHIR type Patient is read with patients:admin, which no entry declares/,
    ],
    [
      'a FHIR type with two owners',
      (l: ServiceList) => {
        l.services[0]!.fhir = { Patient: 'patients:read' }
        l.services[1]!.fhir = { Patient: 'appointments:read' }
      },
      /the FHIR type Patient has two owners/,
    ],
    [
      'a FHIR type that is no resource name',
      (l: ServiceList) => (l.services[0]!.fhir = { patient: 'patients:read' }),
      /patients: fhir must map FHIR resource types/,
    ],
  ])('refuses %s, naming it on one line', (_, edit, why) => {
    const message = problemOf(changed(edit))
    expect(message).toMatch(/^packages\/platform\/services\.json: /)
    expect(message).toMatch(why)
    expect(message).not.toContain('\n')
  })

  it('names every problem at once, and text that is not JSON', () => {
    const message = problemOf(
      changed((l) => {
        l.services[0]!.port = 0
        l.services[1]!.families = [] as unknown as Record<string, string>
      }),
    )
    expect(message).toMatch(/patients needs a port.*; appointments needs families/)
    expect(problemOf('{"gateway":')).toMatch(/^packages\/platform\/services\.json is not JSON/)
  })

  it('gives each service its port and local URL', () => {
    for (const s of [serviceList().gateway, ...serviceList().services]) {
      expect(servicePort(s.name)).toBe(s.port)
      expect(serviceUrl(s.name)).toBe(`http://127.0.0.1:${s.port}`)
    }
    expect(() => servicePort('billing')).toThrow(/lists no service billing/)
  })

  it('defaults <NAME>_PORT and <NAME>_URL to the list, and the environment still wins', () => {
    const spec = { P: v.servicePort('patients'), U: v.serviceUrl('comms') }
    expect(loadConfig(spec, {})).toEqual({ P: servicePort('patients'), U: serviceUrl('comms') })
    expect(loadConfig(spec, { P: '9100', U: 'https://comms.internal' })).toEqual({
      P: 9100,
      U: 'https://comms.internal',
    })
    expect(() => loadConfig(spec, { U: 'ftp://x' })).toThrow(/U must be a http: or https: URL/)
  })

  it('knows every published event type by its contract, each with a resource and a data schema', () => {
    const published = [serviceList().gateway, ...serviceList().services].flatMap((s) => s.publishes ?? [])
    expect(Object.keys(eventContracts).sort()).toEqual(published.sort())
    for (const c of Object.values(eventContracts)) {
      expect(c.resource).toMatch(/^[a-z_]+$/)
      expect(c.data).toHaveProperty('type', 'object')
    }
  })
})
