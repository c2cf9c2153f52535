/** See service-env.cjs: one service's environment in a local stack (its login role, its event key). */
export function serviceEnv(
  name: string,
  env: Record<string, string | undefined>,
  ownerUrl?: string,
): Record<string, string>
