/** The current version answers under both bases (DESIGN.md section 3). */
export const BASES = ['/api', '/api/3'] as const
