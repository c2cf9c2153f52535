// @clinic/platform/http: the Fastify side of a service: the platform plugin, route schema helpers,
// request validation, and the signed call to another service.
export * from '../http'
export * from '../schemas'
export * from '../lifecycle'
export * from '../service-call'
export * from '../internal-client'
export * from '../links/page'
export * from '../assertion'
export { AssertionBatcher, MAX_BATCH } from '../assertion-batch'
export * from '../service-list'
