/**
 * Boot-time configuration from the environment. Every variable of a service is declared once,
 * coerced, and checked; all problems are reported in one line, and the result is frozen.
 * Only a service's config.ts calls this (STYLE.md section 4).
 */
import { ConfigError } from './config-error'
import { servicePort, serviceUrl } from './service-list'

type Kind = 'string' | 'int' | 'number' | 'port' | 'url' | 'bool' | 'list'
interface VarSpec<K extends Kind> {
  kind: K
  default?: string
  optional?: boolean
  min?: number
  max?: number
  /** Allowed URL protocols, e.g. ['postgres:', 'postgresql:']. */
  protocols?: string[]
  /** Allowed values of a string. */
  choices?: readonly string[]
  /** A string's form, and how the error says it: `<NAME> must be <says>`. */
  pattern?: { re: RegExp; says: string }
  /**
   * A secret (a string, a list of `name=key` entries, or a URL whose password is one): a value that
   * is still an example's placeholder (`change-me...`, `CHANGE_ME...`) is refused at start-up.
   */
  secret?: boolean
}
type Value<K extends Kind> = K extends 'int' | 'number' | 'port'
  ? number
  : K extends 'bool'
    ? boolean
    : K extends 'list'
      ? string[]
      : string
export type ConfigSpec = Record<string, VarSpec<Kind>>
export type Config<S extends ConfigSpec> = {
  readonly [N in keyof S]: S[N] extends { optional: true }
    ? Value<S[N]['kind']> | undefined
    : Value<S[N]['kind']>
}

export const v = {
  string: (o: Omit<VarSpec<'string'>, 'kind'> = {}) => ({ kind: 'string' as const, ...o }),
  int: (o: Omit<VarSpec<'int'>, 'kind'> = {}) => ({ kind: 'int' as const, ...o }),
  /** A decimal number (`0.25`), within `min` and `max` when given. */
  number: (o: Omit<VarSpec<'number'>, 'kind'> = {}) => ({ kind: 'number' as const, ...o }),
  port: (o: Omit<VarSpec<'port'>, 'kind'> = {}) => ({ kind: 'port' as const, ...o }),
  url: (o: Omit<VarSpec<'url'>, 'kind'> = {}) => ({ kind: 'url' as const, ...o }),
  bool: (o: Omit<VarSpec<'bool'>, 'kind'> = {}) => ({ kind: 'bool' as const, ...o }),
  list: (o: Omit<VarSpec<'list'>, 'kind'> = {}) => ({ kind: 'list' as const, ...o }),
  // The defaults below are read from services.json when the config loads, not when config.ts is
  // imported: a malformed list then stops the service with its one line (exitOnConfigError).
  /** `<NAME>_PORT`: the port services.json gives the service unless the variable says otherwise. */
  servicePort: (service: string) => ({
    kind: 'port' as const,
    get default() {
      return String(servicePort(service))
    },
  }),
  /** `<NAME>_URL`: where another service answers, http://127.0.0.1:<its port in services.json> by default. */
  serviceUrl: (service: string) => ({
    kind: 'url' as const,
    protocols: ['http:', 'https:'],
    get default() {
      return serviceUrl(service)
    },
  }),
}

export { ConfigError }

/** The examples' placeholders (.env.example `change-me-...`, secret.example.yaml `CHANGE_ME_...`). */
const PLACEHOLDER = /^change[-_]?me/i

/** The parts of a secret's value that must not be a placeholder: the value, each entry's key, a URL's password. */
function secretParts(spec: VarSpec<Kind>, raw: string): string[] {
  if (spec.kind === 'url') {
    try {
      return [decodeURIComponent(new URL(raw).password)]
    } catch {
      return []
    }
  }
  // `name=key,...` (SERVICE_VERIFY_KEYS): each key, and the value as a whole.
  return [raw, ...raw.split(',').map((e) => e.slice(e.indexOf('=') + 1).trim())]
}

const isPlaceholder = (spec: VarSpec<Kind>, raw: string) =>
  spec.secret === true && secretParts(spec, raw).some((p) => PLACEHOLDER.test(p.trim()))

function coerce(name: string, spec: VarSpec<Kind>, raw: string): { value?: unknown; error?: string } {
  switch (spec.kind) {
    case 'int':
    case 'port': {
      if (!/^-?\d+$/.test(raw)) return { error: `${name} must be an integer` }
      const n = Number(raw)
      const min = spec.min ?? (spec.kind === 'port' ? 0 : Number.MIN_SAFE_INTEGER)
      const max = spec.max ?? (spec.kind === 'port' ? 65535 : Number.MAX_SAFE_INTEGER)
      if (n < min || n > max) return { error: `${name} must be between ${min} and ${max}` }
      return { value: n }
    }
    case 'number': {
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(raw)) return { error: `${name} must be a number` }
      const n = Number(raw)
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max))
        return { error: `${name} must be between ${spec.min ?? '-∞'} and ${spec.max ?? '∞'}` }
      return { value: n }
    }
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return { value: true }
      if (/^(0|false|no|off)$/i.test(raw)) return { value: false }
      return { error: `${name} must be true or false` }
    case 'url': {
      let url: URL
      try {
        url = new URL(raw)
      } catch {
        return { error: `${name} must be a URL` }
      }
      if (spec.protocols && !spec.protocols.includes(url.protocol))
        return { error: `${name} must be a ${spec.protocols.join(' or ')} URL` }
      return { value: raw }
    }
    case 'list':
      return {
        value: raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      }
    default:
      if (spec.choices && !spec.choices.includes(raw))
        return { error: `${name} must be one of ${spec.choices.join(', ')}` }
      if (spec.min !== undefined && raw.length < spec.min)
        return { error: `${name} must be at least ${spec.min} characters` }
      if (spec.pattern && !spec.pattern.re.test(raw)) return { error: `${name} must be ${spec.pattern.says}` }
      return { value: raw }
  }
}

export function loadConfig<S extends ConfigSpec>(spec: S, env: NodeJS.ProcessEnv = process.env): Config<S> {
  const out: Record<string, unknown> = {}
  const errors: string[] = []
  for (const [name, s] of Object.entries(spec)) {
    const given = env[name]
    const raw = given === undefined || given === '' ? s.default : given
    if (raw === undefined) {
      if (!s.optional) errors.push(`${name} is required`)
      continue
    }
    if (isPlaceholder(s, raw)) {
      errors.push(`${name} is a placeholder (change-me...): set a real secret`)
      continue
    }
    const { value, error } = coerce(name, s, raw)
    if (error) errors.push(error)
    else out[name] = value
  }
  if (errors.length) throw new ConfigError(`Invalid configuration: ${errors.join('; ')}`)
  return Object.freeze(out) as Config<S>
}

/** A configuration error: print its one-line reason and exit 78. Anything else: return (the caller reports it). */
export function exitOnConfigError(err: unknown): void {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`)
    process.exit(78)
  }
}
