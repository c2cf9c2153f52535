import { AppError } from '@clinic/platform/core'

/** A webhook URL that is not https or names a private, loopback, link-local or metadata address. */
export class UnsafeUrl extends AppError {
  constructor(detail: string) {
    super({ status: 422, code: 'unsafe_url', title: 'Unsafe webhook URL', detail: `url ${detail}` })
  }
}

/** The company has MAX_ENDPOINTS endpoints already. */
export class EndpointLimitReached extends AppError {
  constructor(max: number) {
    super({
      status: 422,
      code: 'endpoint_limit_reached',
      title: 'Too many webhook endpoints',
      detail: `A company has at most ${max} webhook endpoints: delete one first`,
    })
  }
}

/** A change-feed cursor from before what the feed keeps (EVENTS_RETENTION_DAYS). */
export class CursorExpired extends AppError {
  constructor() {
    super({
      status: 410,
      code: 'cursor_expired',
      title: 'Cursor expired',
      detail:
        'Events after this cursor are no longer kept: start again without `after` and read the resources',
    })
  }
}
