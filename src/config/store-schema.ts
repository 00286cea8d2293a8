// The `store` section of config.yaml: which engine holds the profile's sessions (store/port.ts)
// and how. SQLite (state.db in the profile folder) is the default and needs nothing; PostgreSQL
// needs its URL, a secret since it may carry a password (config/secrets.ts).
import { z } from "zod";
import { nonNegativeInt, positiveInt } from "./schema-parts.js";

// biome-ignore lint/suspicious/noTemplateCurlyInString: a config value as the user writes it
const URL_EXAMPLE = 'postgresql://tenax:PASSWORD@db.example:5432/tenax (or "${TENAX_DATABASE_URL}")';

const postgresUrl = z.url({
  protocol: /^postgres(ql)?$/,
  error: `expected a postgresql:// URL, e.g. ${URL_EXAMPLE}`,
});

export const storeSchema = z
  .strictObject({
    /** sqlite: state.db, embedded (the default); postgres: the database at `url`. */
    engine: z
      .enum(["sqlite", "postgres"], { error: "expected sqlite (embedded, the default) or postgres" })
      .default("sqlite"),
    /** The PostgreSQL database (engine: postgres only). */
    url: postgresUrl.optional(),
    /** Connections the PostgreSQL pool may open. */
    pool_size: positiveInt().default(10),
    synchronous: z.enum(["full", "normal"], { error: "expected full or normal" }).default("full"),
    busy_timeout_ms: nonNegativeInt().default(100),
    write_retry_budget_ms: nonNegativeInt().default(30000),
    integrity_check_timeout_ms: nonNegativeInt().default(2000),
  })
  .superRefine((store, ctx) => {
    if (store.engine === "postgres" && store.url === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["url"],
        message: `missing: engine postgres needs the database's URL, e.g. ${URL_EXAMPLE}`,
      });
  });

export type StoreConfig = z.infer<typeof storeSchema>;
