/** See service-env.cjs: one service's environment in a local stack (its login role, its broker user). */
export function serviceEnv(
  name: string,
  env: Record<string, string | undefined>,
  ownerUrl?: string,
): Record<string, string>
/** The Ed25519 key pair of `issuer` (`gateway` or a service) derived from ASSERTION_ROOT_SECRET. */
export function assertionKeyPair(
  rootSecret: string,
  issuer: string,
): { privateKey: string; publicKey: string }
