import type { ClientOf, InternalEndpoint } from './define'
import { CALLS, internalApi } from './index'

export * from './define'
export { CALLS, internalApi }
export {
  AppointmentSummary,
  OFFER_ACTIONS,
  OFFER_STATES,
  PATIENT_ACTIONS,
  WaitlistOffer,
  type OfferAction,
  type PatientAction,
} from './appointments'
export { ExamSummary } from './clinical'
export { InternalMessage } from './comms'

export type InternalApi = typeof internalApi
/** A service that calls others (services.json `calls`). */
export type Caller = keyof typeof CALLS
/** A service that others call. */
export type Callee = keyof InternalApi

/**
 * What a service's `deps.services` is: a typed client for each service it calls, with a method for
 * each endpoint of that service it may use (e.g. `services.patients.lookUp(ctx, id)`).
 */
export type ServicesOf<C extends string> = C extends Caller
  ? { [S in (typeof CALLS)[C][number]]: ClientOf<InternalApi[S], C> }
  : Record<never, never>

/** Every endpoint, with the name of its client method. */
export const everyInternalEndpoint = (): Array<{ name: string; endpoint: InternalEndpoint }> =>
  Object.values(internalApi).flatMap((api) =>
    Object.entries(api as Record<string, InternalEndpoint>).map(([name, endpoint]) => ({ name, endpoint })),
  )
