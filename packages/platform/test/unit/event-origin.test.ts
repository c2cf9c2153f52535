import { ConfigError, brokerUserPrefix, checkOrigin, eventOrigins } from '@clinic/platform'

// The rule consumers apply (DESIGN.md section 17): the broker's user_id must be the source's user,
// the source must emit the type (services.json `publishes`), the routing key must be the type.
describe('checkOrigin', () => {
  const origins = eventOrigins('t1-')
  const patientUpdated = { source: 'clinic/patients', type: 'patient.updated' }
  const as = (userId: string | undefined, routingKey = 'patient.updated') => ({ userId, routingKey })

  it("accepts an event of its source's type, published by that source's user under its type", () => {
    expect(checkOrigin(patientUpdated, as('t1-clinic-patients'), origins)).toBe('ok')
    expect(
      checkOrigin(
        { source: 'clinic/gateway', type: 'http.batch' },
        as('t1-clinic-gateway', 'http.batch'),
        origins,
      ),
    ).toBe('ok')
  })

  it.each([
    ['another service user', patientUpdated, as('t1-clinic-comms'), 'wrong_user'],
    ['the user of another stack', patientUpdated, as('clinic-patients'), 'wrong_user'],
    ['no user_id', patientUpdated, as(undefined), 'wrong_user'],
    [
      'a source that is no service',
      { source: 'clinic/nobody', type: 'patient.updated' },
      as('t1-clinic-patients'),
      'unknown_source',
    ],
    [
      'a type its source does not emit',
      { source: 'clinic/comms', type: 'patient.updated' },
      as('t1-clinic-comms'),
      'type_not_emitted',
    ],
    [
      'a routing key that is not the type',
      patientUpdated,
      as('t1-clinic-patients', 'patient.created'),
      'routing_key_mismatch',
    ],
  ] as const)('refuses %s', (_what, event, delivery, reason) => {
    expect(checkOrigin(event, delivery, origins)).toBe(reason)
  })
})

describe('brokerUserPrefix', () => {
  it("reads the stack's prefix from the service's own user", () => {
    expect(brokerUserPrefix('amqp://clinic-audit:pw@mq:5672/clinic', 'audit')).toBe('')
    expect(brokerUserPrefix('amqp://t9-clinic-audit:pw@mq:5672/x', 'audit')).toBe('t9-')
  })
  it('refuses another user (guest, another service) with a ConfigError naming AMQP_URL', () => {
    expect(() => brokerUserPrefix('amqp://guest:guest@127.0.0.1:5672', 'audit')).toThrow(ConfigError)
    expect(() => brokerUserPrefix('amqp://clinic-comms:pw@mq/clinic', 'audit')).toThrow(/AMQP_URL/)
  })
})
