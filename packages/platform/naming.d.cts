/** See naming.cjs: how a service's names are made from its entry in services.json. */

/** Its work queue on clinic.events and the routing keys bound to it. */
export interface QueueEntry {
  queue: string
  bindings: string[]
}

/** An entry of services.json (the gateway or a resource service). */
export interface AppEntry {
  name: string
  port: number
  replicas: { min: number; max: number }
  /** PostgreSQL schema, when not the name with - as _. */
  schema?: string
  /** Event types it emits. */
  publishes?: string[]
  consumes?: QueueEntry[]
  /** Resource services it calls over signed internal HTTP. */
  calls?: string[]
}

export interface ResourceEntry extends AppEntry {
  /** The API path families it answers (first segment under /api), each with its audit resource type. */
  families: Record<string, string>
  /** Its main list operation (GET), under the API base. */
  list_path: string
  webhooks?: string[]
  body_limits?: Record<string, number>
}

export interface ServiceNames {
  name: string
  /** `a-b` -> `A_B` */
  envPrefix: string
  /** `clinic_a_b` */
  loginRole: string
  schema: string
  /** `clinic-a-b` */
  brokerUser: string
  /** `clinic/a-b` */
  image: string
  env: {
    port: string
    url: string
    dbPassword: string
    amqpPassword: string
    amqpUrl: string
    databaseUrl: string
  }
}

export declare const apps: readonly AppEntry[]
export declare const resources: readonly ResourceEntry[]
export declare const list: {
  gateway: AppEntry
  services: ResourceEntry[]
  planned: Array<{ family: string; area: string; resource_type: string }>
}
export declare function envPrefix(name: string): string
export declare function namesOf(service: string | AppEntry): ServiceNames
export declare function envName(service: string | AppEntry, what: string): string
/** What DB_ROLE_PREFIX may be: empty, or lowercase letters, digits and `_`, from a letter to a `_`. */
export declare const DB_ROLE_PREFIX: RegExp
/** `<prefix><role>`: a stack's name of a database role (login or NOLOGIN); throws on a bad prefix. */
export declare function stackDbRole(role: string, prefix?: string): string
