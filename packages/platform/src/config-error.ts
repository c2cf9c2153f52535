/** A configuration that cannot start a service: its message is the one line printed (exitOnConfigError). */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
