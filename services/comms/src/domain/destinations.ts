import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max'

/**
 * Numbers that cost their sender (or their owner) more than a message should: premium-rate,
 * shared-cost and universal access numbers. The full metadata (`/max`) is what knows a number's type.
 */
const PAID_TYPES: ReadonlySet<NonNullable<NumberType>> = new Set(['PREMIUM_RATE', 'SHARED_COST', 'UAN'])

/**
 * Why an SMS may not go to `phone` (E.164), or null when it may: not a valid number, a country
 * outside `countries` (COMMS_SMS_COUNTRIES, ISO 3166 alpha-2), or a paid number type. The reason
 * names the country, never the number.
 */
export function smsDestinationProblem(phone: string, countries: readonly string[]): string | null {
  const parsed = parsePhoneNumberFromString(phone)
  if (!parsed || !parsed.isValid()) return 'the phone number is not a valid international (E.164) number'
  const country = parsed.country
  const allowed = countries.map((c) => c.toUpperCase())
  if (!country || !allowed.includes(country))
    return `SMS to ${country ?? `country code +${parsed.countryCallingCode}`} is not allowed (allowed: ${allowed.join(', ')})`
  const type = parsed.getType()
  if (type && PAID_TYPES.has(type))
    return `SMS to ${type === 'PREMIUM_RATE' ? 'premium-rate' : type === 'SHARED_COST' ? 'shared-cost' : 'universal access'} numbers of ${country} is not allowed`
  return null
}
