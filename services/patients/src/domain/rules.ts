import { canonicalJson, type FieldError } from '@clinic/platform/core'
import type {
  CreatePatientInput,
  PatientAddress,
  PatientFields,
  PatientGuardian,
  UpdatePatientInput,
} from '../schemas/patient'

/** Pure rules of the Patient resource (DESIGN.md section 4); unit-tested without a database. */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
export const EARLIEST_BIRTH_DATE = '1900-01-01'

/**
 * The latest calendar date anywhere on Earth (UTC+14): a baby born "today" in Kiribati is not
 * refused because the server runs on UTC.
 */
export function latestToday(now: Date): string {
  return new Date(now.getTime() + 14 * 3_600_000).toISOString().slice(0, 10)
}

export function isRealDate(value: string): boolean {
  const m = DATE.exec(value)
  if (!m) return false
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])))
  return d.toISOString().slice(0, 10) === value
}

/**
 * Checks the schema cannot express (birth_date not in the future). Defensive about types: the
 * route also calls it on bodies that failed their schema, so every bad field is listed at once.
 */
export function patientFieldErrors(body: unknown, now = new Date()): FieldError[] {
  const errors: FieldError[] = []
  if (body === null || typeof body !== 'object') return errors
  const birth = (body as Record<string, unknown>).birth_date
  if (typeof birth === 'string' && isRealDate(birth)) {
    if (birth > latestToday(now)) errors.push({ path: '/birth_date', message: 'must not be in the future' })
    else if (birth < EARLIEST_BIRTH_DATE)
      errors.push({ path: '/birth_date', message: `must be on or after ${EARLIEST_BIRTH_DATE}` })
  }
  return errors
}

/** With requires_legal_guardian the guardian needs a name and an email or a phone. */
export function guardianSatisfied(p: Pick<PatientFields, 'requires_legal_guardian' | 'guardian'>): boolean {
  if (!p.requires_legal_guardian) return true
  const g = p.guardian
  return !!g && g.name.trim() !== '' && (!!g.email || !!g.phone)
}

type AddressInput = NonNullable<CreatePatientInput['address']>
type GuardianInput = NonNullable<CreatePatientInput['guardian']>

/** Stored addresses always carry all six keys; an address with no part at all is no address. */
export function normalizeAddress(a: AddressInput | null | undefined): PatientAddress | null {
  if (!a) return null
  const out: PatientAddress = {
    line1: a.line1 ?? null,
    line2: a.line2 ?? null,
    city: a.city ?? null,
    postal_code: a.postal_code ?? null,
    region: a.region ?? null,
    country: a.country ?? null,
  }
  return Object.values(out).some((v) => v !== null) ? out : null
}

export function normalizeGuardian(g: GuardianInput | null | undefined): PatientGuardian | null {
  if (!g) return null
  return {
    name: g.name,
    relationship: g.relationship ?? null,
    email: g.email ?? null,
    phone: g.phone ?? null,
  }
}

/** A create body with defaults applied; `codalmacen` is decided by the caller (body, else query). */
export function fieldsFromCreate(body: CreatePatientInput, codalmacen: string | null): PatientFields {
  return {
    codalmacen,
    first_name: body.first_name,
    last_name: body.last_name,
    birth_date: body.birth_date,
    sex: body.sex ?? null,
    national_id: body.national_id ?? null,
    email: body.email ?? null,
    phone: body.phone ?? null,
    address: normalizeAddress(body.address),
    preferred_channel: body.preferred_channel ?? null,
    language: body.language ?? 'es',
    requires_legal_guardian: body.requires_legal_guardian ?? false,
    guardian: normalizeGuardian(body.guardian),
    notes: body.notes ?? null,
  }
}

/**
 * PATCH: fields left out stay as they are; a field sent as null is cleared. `address` and
 * `guardian` are replaced as whole values (not merged key by key), so what the client sends is
 * what is stored.
 */
export function applyPatch(current: PatientFields, patch: UpdatePatientInput): PatientFields {
  const next: PatientFields = { ...current }
  const set = next as Record<string, unknown>
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue
    if (key === 'address') next.address = normalizeAddress(patch.address)
    else if (key === 'guardian') next.guardian = normalizeGuardian(patch.guardian)
    else if (key in current) set[key] = value
  }
  return next
}

export const FIELD_NAMES = [
  'codalmacen',
  'first_name',
  'last_name',
  'birth_date',
  'sex',
  'national_id',
  'email',
  'phone',
  'address',
  'preferred_channel',
  'language',
  'requires_legal_guardian',
  'guardian',
  'notes',
] as const satisfies ReadonlyArray<keyof PatientFields>

/** Names of the fields whose values differ (nested objects compared by value). */
export function changedFields(before: PatientFields, after: PatientFields): Array<keyof PatientFields> {
  return FIELD_NAMES.filter((f) => canonicalJson(before[f]) !== canonicalJson(after[f]))
}

export function pickFields<T extends object, K extends keyof T>(obj: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>
  for (const k of keys) out[k] = obj[k]
  return out
}
