// Opening a PostgreSQL store: check whose store the database holds and which schema it has, then
// apply each migration it lacks in a transaction of its own. Every such transaction first takes a
// transaction-scoped advisory lock, so processes opening a new database at once queue up and each
// applies only what no other applied meanwhile (the version is read again under the lock).
import type pg from "pg";
import { newId } from "../../core/ids.js";
import { StoreOpenError } from "../errors.js";
import { META_TABLE_SQL, PG_MIGRATIONS, PG_SCHEMA_VERSION } from "./pg-schema.js";

/** The advisory lock every migration takes (a constant of this adapter: "TNAX" as an integer). */
const MIGRATION_LOCK = 0x544e4158;

export interface StoreIdentity {
  storeId: string;
  from: number;
  to: number;
}

async function inLockedTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(META_TABLE_SQL);
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    broken = error as Error;
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release(broken);
  }
}

async function meta(client: pg.PoolClient): Promise<Map<string, string>> {
  const { rows } = await client.query<{ key: string; value: string }>("SELECT key, value FROM tenax_meta");
  return new Map(rows.map((r) => [r.key, r.value]));
}

/** Refuse a database that holds another profile's store or a schema from a newer Tenax. */
function checkIdentity(values: Map<string, string>, profile: string, where: string): number {
  const version = Number(values.get("schema_version") ?? 0);
  if (version > PG_SCHEMA_VERSION) {
    throw new StoreOpenError(
      "store_too_new",
      `the database ${where} holds a store of schema version ${version}; this Tenax knows up to ${PG_SCHEMA_VERSION}`,
      { hint: "upgrade Tenax to open it (a newer store is never changed by an older Tenax)" },
    );
  }
  const owner = values.get("profile");
  if (owner !== undefined && owner !== profile) {
    throw new StoreOpenError(
      "store_wrong_profile",
      `the database ${where} holds the store of profile '${owner}', not '${profile}'`,
      { hint: "give each profile a database of its own (store.url in the profile's config)" },
    );
  }
  return version;
}

/** A database without a Tenax schema that holds tables of another program is never written to. */
async function checkNotForeign(client: pg.PoolClient, where: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'tenax_meta'
      ORDER BY tablename LIMIT 3`,
  );
  if (rows.length === 0) return;
  throw new StoreOpenError(
    "store_foreign",
    `the database ${where} holds tables of another program (${rows.map((r) => r.name).join(", ")}), not a Tenax store`,
    { hint: "give the profile an empty database of its own; Tenax creates its tables there" },
  );
}

/** Check the database's identity and bring its schema up to date; returns the store's id. */
export async function migratePostgres(pool: pg.Pool, profile: string, where: string): Promise<StoreIdentity> {
  const from = await inLockedTransaction(pool, async (client) => {
    const version = checkIdentity(await meta(client), profile, where);
    if (version === 0) await checkNotForeign(client, where);
    return version;
  });
  for (const migration of PG_MIGRATIONS) {
    if (migration.version <= from) continue;
    await inLockedTransaction(pool, async (client) => {
      const values = await meta(client);
      if (checkIdentity(values, profile, where) >= migration.version) return;
      await client.query(migration.sql);
      await client.query(
        `INSERT INTO tenax_meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [String(migration.version)],
      );
      if (!values.has("store_id")) {
        await client.query("INSERT INTO tenax_meta (key, value) VALUES ('store_id', $1), ('profile', $2)", [
          newId("store_", Date.now()),
          profile,
        ]);
      }
    });
  }
  const storeId = await inLockedTransaction(pool, async (client) => (await meta(client)).get("store_id"));
  return { storeId: storeId ?? "", from, to: PG_SCHEMA_VERSION };
}
