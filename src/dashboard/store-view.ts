// What the dashboard reads from the profile, always read-only: the per-layer status report and the
// sessions, searches and transcripts of the store. A store that is missing, locked or damaged is
// reported as the store layer's state (and as a clear error on the session routes), never a crash.
import { loadConfig } from "../config/load.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import type { OutsideView } from "../health/gateway-status.js";
import { collectStatus, openForStatus, type StatusReport } from "../health/status.js";
import { HttpError, typeForStatus } from "../http/http-error.js";
import type { ProfilePaths } from "../profile/paths.js";
import { recoverCommand } from "../store/open-database.js";
import type { SearchResult, StoreReads } from "../store/port.js";
import { urlWithoutPassword } from "../store/postgres/pg-url.js";
import { type EngineSettings, engineOf, openProfileReader, type ProfileReader } from "../store/registry.js";
import type { SessionView } from "../store/rows.js";
import { type TranscriptMessage, transcriptView } from "./transcript-view.js";

/**
 * An answer the page can show as it is: HTTP status, a code, what went wrong and what to run
 * (`hint`, also null). The dashboard's body is {"error":{"code","message","hint"}} (app.ts).
 */
export function dashboardError(
  status: number,
  code: string,
  message: string,
  hint: string | null = null,
): HttpError {
  return new HttpError(status, typeForStatus(status), code, message, {}, { error: { hint } });
}

export type LayersView =
  | { ok: true; report: StatusReport; config_warnings: string[] }
  | { ok: false; error: { code: string; message: string; hint: string | null } };

/**
 * Every layer exactly as `tenax status` tells it (one function, collectStatus, over the same
 * inputs): `gateway` is the dashboard probe's last look at the gateway, in place of status's own.
 * A config that does not load is the answer itself.
 */
export async function readLayers(
  paths: ProfilePaths,
  now: number,
  gateway: () => Promise<OutsideView>,
): Promise<LayersView> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(paths);
  } catch (error) {
    return { ok: false, error: describe(error, "config_invalid") };
  }
  const opened = await openForStatus(paths, loaded.config);
  try {
    const report = await collectStatus({ paths, config: loaded.config, ...opened, now, gateway });
    return { ok: true, report, config_warnings: loaded.warnings };
  } finally {
    opened.reader?.close();
  }
}

export function listSessions(paths: ProfilePaths, limit: number, offset: number): Promise<SessionView[]> {
  return withStore(paths, (reader) => reader.listSessions({ limit, offset }), []);
}

/** The hits, and each of their sessions as the list shows it (title, last turn). */
export function searchSessions(
  paths: ProfilePaths,
  query: string,
): Promise<SearchResult & { sessions: Record<string, SessionView> }> {
  return withStore(
    paths,
    async (reader) => {
      const result = await reader.search(query, { limit: 50 });
      const sessions = new Map<string, SessionView | null>();
      for (const hit of result.hits)
        if (!sessions.has(hit.session_id))
          sessions.set(hit.session_id, await reader.getSession(hit.session_id));
      const found = [...sessions].filter((entry): entry is [string, SessionView] => entry[1] !== null);
      return { ...result, sessions: Object.fromEntries(found) };
    },
    { query, order: "relevance" as const, hits: [], pending: 0, sessions: {} },
  );
}

export async function transcript(
  paths: ProfilePaths,
  id: string,
): Promise<{ session: SessionView; messages: TranscriptMessage[] }> {
  const found = await withStore(
    paths,
    async (reader) => {
      const session = await reader.getSession(id);
      return session === null ? null : { session, messages: transcriptView(await reader.getMessages(id)) };
    },
    null,
  );
  if (found === null) throw dashboardError(404, "session_not_found", `no session ${id} in ${paths.state}`);
  return found;
}

/**
 * PostgreSQL readers kept open across requests, by profile and URL: opening one connects and checks
 * the schema (tens of milliseconds, a server process each time), too much for a page that polls.
 * Its small pool reconnects by itself after an outage. SQLite readers are still opened per request:
 * a file handle is cheap, and a restore may replace the file between two requests.
 */
const sharedReaders = new Map<string, Promise<ProfileReader | null>>();

/** Close the shared readers (the dashboard is stopping). */
export async function closeStoreViews(): Promise<void> {
  const readers = [...sharedReaders.values()];
  sharedReaders.clear();
  for (const reader of readers) (await reader.catch(() => null))?.close();
}

async function openFor(paths: ProfilePaths, engine: EngineSettings): Promise<ProfileReader | null> {
  if (engine.engine !== "postgres") return openProfileReader(paths, engine);
  const key = `${paths.name} ${engine.url}`;
  let reader = sharedReaders.get(key);
  if (reader === undefined) {
    reader = openProfileReader(paths, engine);
    sharedReaders.set(key, reader);
    reader.catch(() => sharedReaders.delete(key));
  }
  return reader;
}

/** Read through the profile's reader; `empty` is the answer while the profile has no store yet. */
async function withStore<T>(
  paths: ProfilePaths,
  body: (reader: StoreReads) => Promise<T>,
  empty: T,
): Promise<T> {
  const engine = readersEngine(paths);
  let reader: ProfileReader | null;
  try {
    reader = await openFor(paths, engine);
  } catch (error) {
    throw storeProblem(paths, error);
  }
  if (reader === null) return empty;
  try {
    return await body(reader);
  } catch (error) {
    throw storeProblem(paths, error);
  } finally {
    if (engine.engine !== "postgres") reader.close();
  }
}

/** Where the dashboard reads the profile's store, safe to show: state.db, or the URL without its password. */
export function storeWhere(paths: ProfilePaths): string {
  const engine = readersEngine(paths);
  return engine.engine === "postgres" && engine.url !== undefined
    ? urlWithoutPassword(engine.url)
    : paths.state;
}

/**
 * The engine the profile's config names. A config that does not load is shown as the error it is
 * by the layers view; meanwhile the transcripts stay readable from state.db, as before engines.
 */
function readersEngine(paths: ProfilePaths): EngineSettings {
  try {
    return engineOf(loadConfig(paths).config.store);
  } catch {
    return {};
  }
}

function storeProblem(paths: ProfilePaths, error: unknown): HttpError {
  if (HttpError.isInstance(error)) return error;
  const { code, message, hint } = describe(error, "store_unreadable");
  // A bad query is the caller's; everything else is the store's state.
  const status = TenaxError.isInstance(error) && error.exitCode === 2 ? 400 : 503;
  return dashboardError(
    status,
    code,
    message,
    hint ?? (status === 503 ? recoverCommand(paths.state, paths.name) : null),
  );
}

function describe(error: unknown, fallback: string): { code: string; message: string; hint: string | null } {
  if (TenaxError.isInstance(error))
    return { code: error.code, message: error.message, hint: error.hint ?? null };
  return { code: fallback, message: errorMessage(error), hint: null };
}
