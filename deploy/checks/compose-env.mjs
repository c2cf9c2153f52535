// deploy/compose/.env.example (every variable compose.yaml requires, placeholders only), and the
// .env parsing and ${VAR} interpolation Compose does, for the compose check.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { read, report, root } from './lib.mjs'

export function parseEnvFile(text) {
  const env = {}
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line)
    if (m) env[m[1]] = m[2].trim()
  }
  return env
}

/** Compose interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, ${VAR?e}, ${VAR:+r}. */
export function interpolate(text, env, problems) {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (all, name, op, arg, bare) => {
      if (all === '$$') return '$'
      const n = name ?? bare
      const v = env[n]
      const unsetOrEmpty = v === undefined || v === ''
      switch (op) {
        case ':-':
          return unsetOrEmpty ? interpolate(arg, env, problems) : v
        case '-':
          return v === undefined ? interpolate(arg, env, problems) : v
        case ':?':
        case '?':
          if (op === ':?' ? unsetOrEmpty : v === undefined)
            problems.push(`required variable ${n} is not in .env.example (${arg})`)
          return v ?? ''
        case ':+':
          return unsetOrEmpty ? '' : interpolate(arg, env, problems)
        case '+':
          return v === undefined ? '' : interpolate(arg, env, problems)
        default:
          return v ?? ''
      }
    },
  )
}

export function checkEnvExample() {
  const file = 'deploy/compose/.env.example'
  if (!existsSync(path.join(root, file))) return
  const problems = []
  const env = parseEnvFile(read(file))
  const compose = read('deploy/compose/compose.yaml')
  const required = [...compose.matchAll(/\$\{([A-Z_][A-Z0-9_]*):?\?/g)].map((m) => m[1])
  for (const k of new Set(required))
    if (!(k in env)) problems.push(`${k} (required by compose.yaml) is not listed`)
  for (const [k, v] of Object.entries(env))
    if (/PASSWORD|SECRET|TOKEN|_KEYS?$/.test(k) && v && !/change-me/i.test(v))
      problems.push(`${k} looks like a real value: examples must be placeholders (change-me...)`)
  report(file, problems, `${Object.keys(env).length} variables, every required one listed, placeholders only`)
}
