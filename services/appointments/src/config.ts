import { loadConfig, v } from '@clinic/platform'

export const configSpec = {
  APPOINTMENTS_PORT: v.port({ default: '8082' }),
  HOST: v.string({ default: '127.0.0.1' }),
  DATABASE_URL: v.url({
    default: 'postgres://postgres@127.0.0.1:5432/clinic',
    protocols: ['postgres:', 'postgresql:'],
  }),
  AMQP_URL: v.url({ default: 'amqp://guest:guest@127.0.0.1:5672', protocols: ['amqp:', 'amqps:'] }),
  AMQP_QUEUE_TYPE: v.string({ default: 'classic', choices: ['classic', 'quorum'] }),
  INTERNAL_AUTH_SECRET: v.string({ min: 32, secret: true }),
  LOG_LEVEL: v.string({
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  }),
}

export const loadAppointmentsConfig = (env = process.env) => loadConfig(configSpec, env)
export type AppointmentsConfig = ReturnType<typeof loadAppointmentsConfig>
