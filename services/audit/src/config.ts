import { loadConfig, v } from '@clinic/platform'

const database = {
  DATABASE_URL: v.url({
    default: 'postgres://postgres@127.0.0.1:5432/clinic',
    protocols: ['postgres:', 'postgresql:'],
  }),
}

export const configSpec = {
  AUDIT_PORT: v.port({ default: '8084' }),
  HOST: v.string({ default: '127.0.0.1' }),
  ...database,
  AMQP_URL: v.url({ default: 'amqp://guest:guest@127.0.0.1:5672', protocols: ['amqp:', 'amqps:'] }),
  AMQP_QUEUE_TYPE: v.string({ default: 'classic', choices: ['classic', 'quorum'] }),
  AUDIT_PREFETCH: v.int({ default: '32', min: 1, max: 1000 }),
  INTERNAL_AUTH_SECRET: v.string({ min: 32, secret: true }),
  LOG_LEVEL: v.string({
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  }),
}

export const loadAuditConfig = (env = process.env) => loadConfig(configSpec, env)
export type AuditConfig = ReturnType<typeof loadAuditConfig>

/** The admin CLI and migrations need only the database. */
export const loadAuditDbConfig = (env = process.env) => loadConfig(database, env)
