import { keyset } from '@clinic/platform/core'

/** Endpoints oldest first; the delivery log newest first (DESIGN.md section 10). */
export const ENDPOINT_KEYSET = keyset({
  order: 'asc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})
export const DELIVERY_KEYSET = keyset({
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})
