// The store layer as a health component: the store read-only (sessions, messages), the writes
// waiting in the spool, and a store that cannot be opened or read (damaged, locked, newer) as
// `down` with the command that salvages it.
import { existsSync } from "node:fs";
import type { TenaxConfig } from "../config/schema.js";
import { TenaxError } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import { recoverCommand } from "../store/open-database.js";
import type { StoreReads } from "../store/port.js";
import { urlWithoutPassword } from "../store/postgres/pg-url.js";
import { type EngineSettings, engineOf, openProfileReader, type ProfileReader } from "../store/registry.js";
import { readSpool } from "../store/spool.js";
import { pendingSpool } from "../store/spool-replay.js";
import type { Component } from "./status.js";

export type StoreComponent = Component & {
  sessions: number | null;
  messages: number | null;
  spooled_writes: number;
  /** A read met damage in state.db (not a lock or a missing file): the writer must stop too. */
  damaged?: boolean;
};

export async function storeComponent(
  paths: ProfilePaths,
  reader: StoreReads | null,
  openError: unknown,
  engine: EngineSettings = {},
): Promise<StoreComponent> {
  const spooled = spooledWrites(paths, engine);
  if (openError !== undefined) return unreadableStore(paths, engine, openError, "opened", spooled);
  const spoolNote =
    spooled > 0
      ? {
          status: "degraded" as const,
          detail: `${spooled} writes wait in ${paths.spool}`,
          next: salvageHint(paths, engine),
        }
      : null;
  if (reader === null) {
    return {
      status: spoolNote ? "degraded" : "ok",
      detail: spoolNote?.detail ?? `no store yet; ${paths.state} is created on first use`,
      next: spoolNote?.next ?? null,
      sessions: null,
      messages: null,
      spooled_writes: spooled,
    };
  }
  try {
    const started = Date.now();
    const stats = await reader.stats();
    const latency =
      engine.engine === "postgres"
        ? ` (PostgreSQL, schema ${stats.schema_version}, answered in ${Date.now() - started} ms)`
        : "";
    const base = `${reader.where}${latency}: ${stats.sessions} session${stats.sessions === 1 ? "" : "s"}, ${stats.messages} message${stats.messages === 1 ? "" : "s"}`;
    return {
      status: spoolNote ? "degraded" : "ok",
      detail: spoolNote ? `${base}; ${spoolNote.detail}` : base,
      next: spoolNote?.next ?? null,
      sessions: stats.sessions,
      messages: stats.messages,
      spooled_writes: spooled,
    };
  } catch (error) {
    return unreadableStore(paths, engine, error, "read", spooled);
  }
}

/**
 * Writes waiting in the spool: on SQLite every record (salvage folds them in); on PostgreSQL those
 * for this database that `tenax store replay` has not replayed yet.
 */
export function spooledWrites(paths: ProfilePaths, engine: EngineSettings): number {
  if (!existsSync(paths.spool)) return 0;
  if (engine.engine === "postgres" && engine.url !== undefined) {
    try {
      return pendingSpool(paths.spool, paths.name, urlWithoutPassword(engine.url)).records.length;
    } catch {
      return readSpool(paths.spool).records.length; // its progress file is unreadable: count them all
    }
  }
  return readSpool(paths.spool).records.length;
}

/** What to do about spooled writes: SQLite's salvage; on PostgreSQL, the replay. */
export function salvageHint(paths: ProfilePaths, engine: EngineSettings): string {
  return engine.engine === "postgres"
    ? `once the database answers, fold them in: ${tenaxCommand(paths.name, ["store", "replay"])} (see what first with --dry-run; nothing is stored twice)`
    : recoverCommand(paths.state, paths.name);
}

/** A store that cannot be opened or read: down, and `damaged` when that is damage in the file. */
function unreadableStore(
  paths: ProfilePaths,
  engine: EngineSettings,
  error: unknown,
  what: "opened" | "read",
  spooled: number,
): StoreComponent {
  const where =
    engine.engine === "postgres" && engine.url !== undefined
      ? `the PostgreSQL store ${urlWithoutPassword(engine.url)}`
      : paths.state;
  return {
    status: "down",
    damaged: TenaxError.isInstance(error) && error.code === "store_corrupt",
    detail: `${where} cannot be ${what}: ${messageOf(error)}`,
    next: TenaxError.isInstance(error) && error.hint ? error.hint : salvageHint(paths, engine),
    sessions: null,
    messages: null,
    spooled_writes: spooled,
  };
}

/**
 * Open the store read-only for a status look, or say why it cannot be: a store that cannot even
 * be opened (damage in its header, another owner, a newer schema) is the store layer's news, not
 * a failed status.
 */
/** A read-only reader for one look (closed by the caller), or why the store could not be opened. */
export async function openForStatus(
  paths: ProfilePaths,
  config: Pick<TenaxConfig, "store">,
): Promise<{ reader: ProfileReader | null; readerError?: unknown; engine: EngineSettings }> {
  const engine = engineOf(config.store);
  try {
    return { reader: await openProfileReader(paths, engine), engine };
  } catch (error) {
    return { reader: null, readerError: error, engine };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
