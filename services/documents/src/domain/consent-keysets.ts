import { keyset } from '@clinic/platform/core'

/** Newest first. */
export const CONSENT_KEYSET = keyset({
  tag: 'c',
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

/** Newest first (a key's latest version first). */
export const TEMPLATE_KEYSET = keyset({
  tag: 't',
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})
