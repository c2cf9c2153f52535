import { smsDestinationProblem } from '../../src/domain/destinations'

const countries = ['ES', 'PT', 'FR', 'AD', 'GB', 'DE', 'IT']

describe('SMS destinations (libphonenumber-js, full metadata)', () => {
  it('allows valid numbers of the allowed countries, mobile or fixed', () => {
    for (const phone of [
      '+34600000001',
      '+34911234567',
      '+351912345678',
      '+33612345678',
      '+376312345',
      '+447400123456',
    ])
      expect([phone, smsDestinationProblem(phone, countries)]).toEqual([phone, null])
  })

  it('refuses premium-rate and shared-cost numbers, naming the kind and the country, never the number', () => {
    expect(smsDestinationProblem('+34803123456', countries)).toBe(
      'SMS to premium-rate numbers of ES is not allowed',
    )
    expect(smsDestinationProblem('+34806123456', countries)).toBe(
      'SMS to premium-rate numbers of ES is not allowed',
    )
    expect(smsDestinationProblem('+34901123456', countries)).toBe(
      'SMS to shared-cost numbers of ES is not allowed',
    )
  })

  it('refuses other countries, numbers of no country, and what is not a valid number', () => {
    expect(smsDestinationProblem('+12025550123', countries)).toBe(
      'SMS to US is not allowed (allowed: ES, PT, FR, AD, GB, DE, IT)',
    )
    expect(smsDestinationProblem('+12025550123', ['es', 'us'])).toBeNull()
    // Satellite and international premium-rate numbers have a calling code, no country.
    expect(smsDestinationProblem('+870772001799', countries)).toBe(
      'SMS to country code +870 is not allowed (allowed: ES, PT, FR, AD, GB, DE, IT)',
    )
    expect(smsDestinationProblem('+979123456789', countries)).toMatch(/^SMS to country code \+979 is not/)
    for (const bad of ['+34123', '600000001', '+999123', 'not a number', ''])
      expect(smsDestinationProblem(bad, countries)).toBe(
        'the phone number is not a valid international (E.164) number',
      )
  })
})
