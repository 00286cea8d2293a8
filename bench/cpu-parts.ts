// A V8 CPU profile (node --cpu-prof) summed by part of the program: each sample's time goes to the
// function it was taken in (self time), and each function to a part by its script: a Tenax layer
// (dist/store is src/store), a package of node_modules, Node's own code, GC. A native function (no
// script) goes with its caller, except better-sqlite3's methods (run, get, all, ...: SQLite's C code
// runs inside them), a part of their own; so is JSON, seen through the preload's jsonParse and
// jsonStringify (V8 charges a builtin to its caller; Node's internals call their own copies, so
// undici's Response.json() stays undici's). Only the samples between two marks (monotonic µs, the
// clock of the profile's timestamps) are counted. A frame in the bundle (dist/bundle/, what a
// `tenax` process runs) is first traced back through the bundle's source map to the module it was
// written in (dist/store/..., node_modules/undici/...), and then sorted like any other script.
import { existsSync, readFileSync } from "node:fs";
import { createRequire, SourceMap, type SourceMapPayload } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const JSON_PART = "JSON (parse, stringify)";

/** The coarse groups, each part in one of them. */
export type CpuGroup =
  | "SQLite and src/store"
  | "provider client (src/llm/providers, undici, openai)"
  | "Fastify"
  | "JSON"
  | "everything else";

export interface CpuPart {
  part: string;
  group: CpuGroup;
  /** Self time within the window, ms. */
  ms: number;
}

export interface CpuFunction {
  function: string;
  where: string;
  part: string;
  ms: number;
}

export interface CpuBreakdown {
  /** The window, ms, and the profile's samples in it (the sampling interval sets the resolution). */
  window_ms: number;
  samples: number;
  /** Whether both marks fell inside the profile (otherwise the whole profile was summed). */
  windowed: boolean;
  /** Self time of everything but idle, ms; and idle (the main thread waiting in the event loop). */
  busy_ms: number;
  idle_ms: number;
  parts: CpuPart[];
  groups: Record<CpuGroup, number>;
  /** The functions with the most self time. */
  top: CpuFunction[];
}

/** better-sqlite3's native methods: where SQLite itself (C) spends its time. */
const SQLITE_NATIVE = new Set([
  "run",
  "get",
  "all",
  "iterate",
  "exec",
  "prepare",
  "pluck",
  "raw",
  "expand",
  "bind",
  "columns",
  "safeIntegers",
  "close",
  "serialize",
]);

/** Fastify and every package it depends on, transitively, as installed. */
function fastifyPackages(): Set<string> {
  const require = createRequire(import.meta.url);
  const seen = new Set<string>();
  const visit = (name: string, from: string) => {
    if (seen.has(name)) return;
    let pkgPath: string;
    try {
      pkgPath = createRequire(from).resolve(`${name}/package.json`);
    } catch {
      return;
    }
    seen.add(name);
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { dependencies?: Record<string, string> };
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, pkgPath);
  };
  visit("fastify", require.resolve("fastify"));
  return seen;
}

const groupOf = (part: string, fastify: Set<string>): CpuGroup => {
  if (part === "SQLite (better-sqlite3)" || part === "src/store") return "SQLite and src/store";
  if (
    part === "openai" ||
    part === "src/llm/providers" ||
    part === "package undici" ||
    part === "Node's fetch (undici)"
  )
    return "provider client (src/llm/providers, undici, openai)";
  if (part === JSON_PART) return "JSON";
  if (part.startsWith("package ") && fastify.has(part.slice("package ".length))) return "Fastify";
  return "everything else";
};

/** Node's own modules, in a few families. */
function nodeModule(url: string): string {
  if (/^node:(_http|http|internal\/http)/.test(url)) return "http";
  if (/^node:(net|stream|internal\/streams|internal\/stream_base|_stream|internal\/net)/.test(url))
    return "net and streams";
  if (/^node:(fs|internal\/fs)/.test(url)) return "fs";
  if (
    /^node:(timers|internal\/timers|internal\/process|internal\/async_hooks|events|internal\/event_target)/.test(
      url,
    )
  )
    return "process, timers, events";
  return "other";
}

/** The part of a script by its URL, or null for a native function (no script). */
function scriptPart(url: string, name: string): string | null {
  if (url === "") return null;
  if (url.includes("/dist-bench/bench/"))
    return name === "jsonParse" || name === "jsonStringify" ? JSON_PART : "bench preload (marks, counters)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg?.[1] !== undefined) {
    if (pkg[1] === "better-sqlite3") return "SQLite (better-sqlite3)";
    if (pkg[1] === "openai") return "openai";
    return `package ${pkg[1]}`;
  }
  if (url.startsWith("node:internal/deps/undici")) return "Node's fetch (undici)";
  if (url.startsWith("node:")) return `Node core: ${nodeModule(url)}`;
  const layer = /\/dist\/([^/]+)\/(?:(providers)\/)?/.exec(url);
  if (layer?.[1] !== undefined)
    return layer[2] === undefined ? `src/${layer[1]}` : `src/${layer[1]}/${layer[2]}`;
  if (url.endsWith("/bin/tenax.js")) return "src/cli";
  return "other scripts";
}

/**
 * The script a bundled frame was written in, as a file URL (`.../dist/store/writer.js`,
 * `.../node_modules/undici/lib/...`), through the bundle's source map; the frame's own URL when it
 * is not in the bundle or the map is missing.
 */
function unbundler(): (frame: ProfileNode["callFrame"]) => { url: string; line: number } {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (url: string): SourceMap | null => {
    if (maps.has(url)) return maps.get(url) ?? null;
    const file = `${fileURLToPath(url)}.map`;
    const map = existsSync(file)
      ? new SourceMap(JSON.parse(readFileSync(file, "utf8")) as SourceMapPayload)
      : null;
    maps.set(url, map);
    return map;
  };
  return (frame) => {
    const own = { url: frame.url, line: frame.lineNumber };
    if (!frame.url.startsWith("file:") || !frame.url.includes("/dist/bundle/")) return own;
    const entry = mapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
    if (entry === undefined || !("originalSource" in entry)) return own;
    const url = entry.originalSource.startsWith("file:")
      ? entry.originalSource
      : pathToFileURL(resolve(dirname(fileURLToPath(frame.url)), entry.originalSource)).href;
    return { url, line: entry.originalLine };
  };
}

export function summarizeCpuProfile(path: string, fromUs: number, toUs: number, top = 15): CpuBreakdown {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const fastify = fastifyPackages();
  const sourceOf = unbundler();
  const urlOf = (node: ProfileNode | undefined): string => (node ? sourceOf(node.callFrame).url : "");

  const partCache = new Map<number, string>();
  const partOf = (id: number): string => {
    const cached = partCache.get(id);
    if (cached !== undefined) return cached;
    const node = byId.get(id);
    const name = node?.callFrame.functionName ?? "";
    let part = scriptPart(urlOf(node), name);
    if (part === null) {
      const up = parent.get(id);
      const caller =
        up === undefined || byId.get(up)?.callFrame.functionName === "(root)" ? null : partOf(up);
      if (name === "(garbage collector)") part = "GC";
      else if (name === "(program)" || name === "(idle)") part = name;
      else if (
        SQLITE_NATIVE.has(name) &&
        (caller === "SQLite (better-sqlite3)" ||
          caller === "src/store" ||
          caller === "bench preload (marks, counters)")
      )
        part = "SQLite (better-sqlite3)";
      else part = caller ?? "V8 and native, no caller";
    }
    partCache.set(id, part);
    return part;
  };

  const windowed = fromUs >= profile.startTime && toUs <= profile.endTime && toUs > fromUs;
  const from = windowed ? fromUs : profile.startTime;
  const to = windowed ? toUs : profile.endTime;
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  let samples = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < from || t > to) continue;
    samples++;
    // A sample stands for the time until the next one.
    const duration = profile.timeDeltas[i + 1] ?? 0;
    const id = profile.samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + duration);
  }

  const parts = new Map<string, number>();
  let idleUs = 0;
  const functions = new Map<string, CpuFunction>();
  for (const [id, us] of selfUs) {
    const part = partOf(id);
    if (part === "(idle)") {
      idleUs += us;
      continue;
    }
    parts.set(part, (parts.get(part) ?? 0) + us / 1000);
    const frame = byId.get(id)?.callFrame;
    const source = frame ? sourceOf(frame) : { url: "", line: 0 };
    const where = source.url ? `${shortUrl(source.url)}:${source.line + 1}` : "(native)";
    const key = `${frame?.functionName ?? "?"} ${where}`;
    const f = functions.get(key) ?? { function: frame?.functionName || "(anonymous)", where, part, ms: 0 };
    f.ms += us / 1000;
    functions.set(key, f);
  }
  const groups: Record<CpuGroup, number> = {
    "SQLite and src/store": 0,
    "provider client (src/llm/providers, undici, openai)": 0,
    Fastify: 0,
    JSON: 0,
    "everything else": 0,
  };
  const partList = [...parts]
    .map(([part, ms]) => ({ part, group: groupOf(part, fastify), ms }))
    .sort((a, b) => b.ms - a.ms);
  for (const p of partList) groups[p.group] += p.ms;
  return {
    window_ms: (to - from) / 1000,
    samples,
    windowed,
    busy_ms: partList.reduce((a, p) => a + p.ms, 0),
    idle_ms: idleUs / 1000,
    parts: partList,
    groups,
    top: [...functions.values()].sort((a, b) => b.ms - a.ms).slice(0, top),
  };
}

/** A script's URL from its package or Tenax folder on. */
function shortUrl(url: string): string {
  const pkg = url.lastIndexOf("node_modules/");
  if (pkg >= 0) return url.slice(pkg + "node_modules/".length);
  const dist = /\/(dist(?:-bench)?\/.*)$/.exec(url);
  return dist?.[1] ?? url;
}

/** The main thread's profile of process `pid` among those --cpu-prof wrote into `dir`. */
export function findCpuProfile(files: string[], dir: string, pid: number): string {
  const mine = files.filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${pid}.`));
  const main = mine.find((f) => f.includes(`.${pid}.0.`)) ?? mine[0];
  if (main === undefined) throw new Error(`no CPU profile of process ${pid} in ${dir}: ${files.join(", ")}`);
  return join(dir, main);
}
