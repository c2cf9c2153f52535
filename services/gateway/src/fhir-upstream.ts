import { request } from 'undici'
import type { Bundle, Resource } from '@medplum/fhirtypes'
import {
  ASSERTION_HEADER,
  FHIR_BASE_HEADER,
  FHIR_SNAPSHOT_HEADER,
  UpstreamUnavailable,
  requestClaims,
  signAssertion,
  type AssertionSigner,
  type Principal,
} from '@clinic/platform'
import { FHIR_TYPES, type Upstreams } from './families'
import { UPSTREAM_TIMEOUT_MS } from './routes/proxy'

/** Where the gateway asks the services for FHIR resources, and the public base their links use. */
export interface FhirUpstream {
  upstreams: Upstreams
  signer: AssertionSigner
  /** The absolute FHIR base clients reach (PUBLIC_BASE_URL and the API base). */
  absolute: string
}

/** Who a FHIR GET is made for: the caller's principal, request id and trace. */
export interface FhirCaller {
  auth: Principal
  requestId: string
  traceparent?: string
}

/**
 * A service's FHIR answer to a GET (`/fhir/R4/<Type>...`) the gateway makes for `who`, signed as
 * theirs (their company and centers apply in the service). A network failure or timeout is 503
 * UpstreamUnavailable; any status the service answers is returned as it is.
 */
export async function fetchFhir(
  o: FhirUpstream,
  who: FhirCaller,
  path: string,
  /** A Bulk Data export's snapshot to read in (FHIR_SNAPSHOT_HEADER). */
  snapshot?: string,
): Promise<{ status: number; body: Bundle & Resource }> {
  const type = path.split(/[/?]/)[3]!
  const service = FHIR_TYPES.get(type)!.service
  const claims = requestClaims(who, { method: 'GET', path, audience: service })
  try {
    const res = await request(`${o.upstreams[service]}${path}`, {
      headers: {
        [ASSERTION_HEADER]: await signAssertion(claims, o.signer),
        'x-request-id': who.requestId,
        ...(who.traceparent ? { traceparent: who.traceparent } : {}),
        [FHIR_BASE_HEADER]: o.absolute,
        ...(snapshot ? { [FHIR_SNAPSHOT_HEADER]: snapshot } : {}),
        accept: 'application/fhir+json',
      },
      headersTimeout: UPSTREAM_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_TIMEOUT_MS,
    })
    return { status: res.statusCode, body: (await res.body.json()) as Bundle & Resource }
  } catch (err) {
    throw Object.assign(new UpstreamUnavailable(`The ${service} service is unavailable; retry shortly`), {
      cause: err,
      upstream: service,
    })
  }
}
