import type { Knex } from 'knex'
import {
  TENANT_PREDICATE,
  TenantRepository,
  companyTransaction,
  createDb,
  ensureRole,
  secureTenantTable,
  uuidv7,
  type TenantTx,
} from '@clinic/platform'
import { databaseUrl, dropSchema, schemaName } from './helpers'

/**
 * secureTenantTable makes a tenant table's security in one call, with the policy the landed
 * migrations wrote by hand; TenantRepository.rowById reads (and locks) a row of the transaction's
 * company.
 */
const schema = schemaName()
const role = `${schema}_app`
const A = 301
const B = 302
let owner: Knex
let app: Knex

// The policy as the landed migrations spell it, in both of their styles (appointments: one ALTER;
// patients: two): the helper's tables must get exactly what these got.
const LANDED = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`

beforeAll(async () => {
  owner = createDb(databaseUrl(), { schema, poolMax: 2 })
  await owner.raw(`CREATE SCHEMA ${schema}`)
  await ensureRole(owner, role)
  await owner.raw(`
    GRANT USAGE ON SCHEMA ${schema} TO ${role};
    CREATE TABLE visits (idempresa integer NOT NULL, id uuid NOT NULL, note text NOT NULL,
      PRIMARY KEY (idempresa, id));
    CREATE UNIQUE INDEX visits_note ON visits (idempresa, note);
    CREATE TABLE landed_one (idempresa integer NOT NULL, id uuid NOT NULL, PRIMARY KEY (idempresa, id));
    ALTER TABLE landed_one ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE POLICY tenant_isolation ON landed_one USING (${LANDED}) WITH CHECK (${LANDED});
    CREATE TABLE landed_two (idempresa integer NOT NULL, id uuid NOT NULL, PRIMARY KEY (idempresa, id));
    ALTER TABLE landed_two ENABLE ROW LEVEL SECURITY;
    ALTER TABLE landed_two FORCE ROW LEVEL SECURITY;
    CREATE POLICY tenant_isolation ON landed_two USING (${LANDED}) WITH CHECK (${LANDED});`)
  await secureTenantTable(owner, 'visits', { role, privileges: ['SELECT', 'INSERT', 'UPDATE'] })
  app = createDb(databaseUrl(), { schema, role, poolMax: 2 })
})

afterAll(async () => {
  await app?.destroy()
  await dropSchema(schema)
  await owner.raw(`DROP ROLE IF EXISTS ${role}`)
  await owner.destroy()
})

const policies = async (table: string) =>
  (
    await owner.raw<{
      rows: Array<{
        policyname: string
        permissive: string
        roles: string[]
        cmd: string
        qual: string
        with_check: string
      }>
    }>(
      `SELECT policyname, permissive, roles::text[] AS roles, cmd, qual, with_check FROM pg_policies
        WHERE schemaname = ? AND tablename = ?`,
      [schema, table],
    )
  ).rows

describe('secureTenantTable', () => {
  it('enables and forces row-level security', async () => {
    const { rows } = await owner.raw<{
      rows: Array<{ relrowsecurity: boolean; relforcerowsecurity: boolean }>
    }>(`SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = ?::regclass`, [
      `${schema}.visits`,
    ])
    expect(rows).toEqual([{ relrowsecurity: true, relforcerowsecurity: true }])
  })

  it('writes the one policy, for reads and writes, exactly as the landed migrations did', async () => {
    const made = await policies('visits')
    expect(made).toEqual([
      {
        policyname: 'tenant_isolation',
        permissive: 'PERMISSIVE',
        roles: ['public'],
        cmd: 'ALL',
        qual: expect.stringContaining("current_setting('app.idempresa'"),
        with_check: made[0]!.qual,
      },
    ])
    expect(await policies('landed_one')).toEqual(made)
    expect(await policies('landed_two')).toEqual(made)
    expect(TENANT_PREDICATE).toBe(LANDED)
  })

  it("grants the service's role what it was given, nothing more", async () => {
    const { rows } = await owner.raw<{ rows: Array<{ privilege_type: string }> }>(
      `SELECT privilege_type FROM information_schema.role_table_grants
        WHERE table_schema = ? AND table_name = 'visits' AND grantee = ? ORDER BY privilege_type`,
      [schema, role],
    )
    expect(rows.map((r) => r.privilege_type)).toEqual(['INSERT', 'SELECT', 'UPDATE'])
  })

  it('shows the role its company only, and refuses rows written for another', async () => {
    await owner('visits').insert([
      { idempresa: A, id: uuidv7(), note: 'a' },
      { idempresa: B, id: uuidv7(), note: 'b' },
    ])
    const notes = (company: number) =>
      companyTransaction(app, company, async (trx) => (await trx('visits').select('note')).map((r) => r.note))
    await expect(notes(A)).resolves.toEqual(['a'])
    await expect(notes(B)).resolves.toEqual(['b'])
    expect(await app('visits').select('note')).toEqual([]) // no company set: nothing
    await expect(
      companyTransaction(app, A, (trx) => trx('visits').insert({ idempresa: B, id: uuidv7(), note: 'x' })),
    ).rejects.toMatchObject({ code: '42501' })
    await expect(
      companyTransaction(app, A, (trx) => trx('visits').where('note', 'b').update({ note: 'c' })),
    ).resolves.toBe(0)
  })

  it.each([
    ['a primary key without idempresa first', 'PRIMARY KEY (id, idempresa)', /bad_t_pkey does not start/],
    ['no primary key', 'UNIQUE (idempresa, id)', /no primary key/],
    ['a unique constraint without it', 'PRIMARY KEY (idempresa, id), UNIQUE (id)', /bad_t_id_key/],
    [
      'a foreign key without it first',
      'PRIMARY KEY (idempresa, id), FOREIGN KEY (id, idempresa) REFERENCES visits (id, idempresa)',
      /bad_t_id_idempresa_fkey/,
    ],
  ])('refuses a table with %s, and leaves it as it was', async (_, keys, message) => {
    await owner.raw(`CREATE UNIQUE INDEX IF NOT EXISTS visits_id ON visits (id, idempresa)`)
    await owner.raw(
      `DROP TABLE IF EXISTS bad_t; CREATE TABLE bad_t (idempresa integer NOT NULL, id uuid NOT NULL, ${keys})`,
    )
    await expect(secureTenantTable(owner, 'bad_t', { role, privileges: ['SELECT'] })).rejects.toThrow(message)
    expect(await policies('bad_t')).toEqual([])
  })

  it('refuses a unique index that does not lead with idempresa', async () => {
    await owner.raw(`
      DROP TABLE IF EXISTS bad_i;
      CREATE TABLE bad_i (idempresa integer NOT NULL, id uuid NOT NULL, code text, PRIMARY KEY (idempresa, id));
      CREATE UNIQUE INDEX bad_i_code ON bad_i (lower(code))`)
    await expect(secureTenantTable(owner, 'bad_i', { role, privileges: ['SELECT'] })).rejects.toThrow(
      /bad_i_code does not start/,
    )
  })
})

interface Visit {
  id: string
  note: string
}

class VisitsRepository extends TenantRepository<TenantTx<Visit>, Visit> {
  constructor(knex: Knex) {
    super(knex, {
      name: 'visits',
      columns: ['id', 'note'],
      toRow: (r) => ({ id: r.id, note: r.note }) as Visit,
    })
  }
  protected tx(_companyId: number, trx: Knex.Transaction): TenantTx<Visit> {
    return { findById: (id, opts) => this.rowById(trx, id, opts), publish: async () => undefined }
  }
  /** rowById on a transaction no company was set on. */
  bare(id: string) {
    return this.knex.transaction((trx) => this.rowById(trx, id))
  }
}

describe('TenantRepository.rowById', () => {
  let repo: VisitsRepository
  const ids: Record<number, string> = {}
  beforeAll(async () => {
    repo = new VisitsRepository(app)
    for (const company of [A, B]) {
      ids[company] = uuidv7()
      await owner('visits').insert({ idempresa: company, id: ids[company], note: `row of ${company}` })
    }
  })

  /** Whether another transaction can take the row's lock at once (NOWAIT). */
  const lockable = (id: string) =>
    owner.transaction(async (trx) => {
      try {
        await trx.raw('SELECT 1 FROM visits WHERE id = ? FOR UPDATE NOWAIT', [id])
        return true
      } catch (err) {
        if ((err as { code?: string }).code === '55P03') return false
        throw err
      }
    })

  it("reads the transaction's company's row, and another company's id as missing", async () => {
    await expect(repo.transaction(A, (tx) => tx.findById(ids[A]!))).resolves.toEqual({
      id: ids[A],
      note: `row of ${A}`,
    })
    await expect(repo.transaction(A, (tx) => tx.findById(ids[B]!))).resolves.toBeNull()
  })

  it('with forUpdate holds the row locked until the transaction ends', async () => {
    await repo.transaction(A, async (tx) => {
      await tx.findById(ids[A]!, { forUpdate: true })
      expect(await lockable(ids[A]!)).toBe(false)
      expect(await lockable(ids[B]!)).toBe(true)
    })
    expect(await lockable(ids[A]!)).toBe(true)
  })

  it('without forUpdate takes no lock', async () => {
    await repo.transaction(A, async (tx) => {
      await tx.findById(ids[A]!)
      expect(await lockable(ids[A]!)).toBe(true)
    })
  })

  it('refuses a transaction no company was set on', async () => {
    await expect(repo.bare(ids[A]!)).rejects.toThrow(/not a company transaction/)
  })
})
