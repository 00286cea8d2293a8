// The code a `tenax` process runs: tsc's output in dist/ bundled, with the packages it uses, into
// a few files in dist/bundle/. A process then loads tens of modules instead of about 1,500 (its
// own 600 and the packages' 900), and Node's per-module cost (resolve, read, link) was most of a
// start: a gateway's, a `tenax status`'s, each CLI call's (docs/PERFORMANCE.md, "A bundled
// start"). Each command and each part the code imports on demand (pg, Telegram's adapter, the
// simulator's server, the Anthropic SDK, undici) stays a chunk of its own, loaded only when used.
//
// The bundle is the modules' code as written, only joined: no tree-shaking and no minifying (not
// even rolldown's default dead-code pass), because both drop a call whose result is unused when
// the bundler believes it pure, and a call made for the exception it may throw is not:
// `try { decodeURIComponent(part) } catch {...}` lost its call, and the dashboard named a whole
// path as the part that is not valid percent-encoding (test/bad-input-edges.test.ts). Keeping
// every statement costs about 4% of a start; a bundle that behaves unlike its source costs more.
//
// Kept out of the bundle: Node's own modules; better-sqlite3, whose native addon is found from
// its package's folder; pg-native, an optional addon pg asks for only when told to.
import { builtinModules } from "node:module";

const EXTERNAL = new Set(["better-sqlite3", "pg-native"]);

/** @param {string} id */
function external(id) {
  if (id.startsWith("node:") || builtinModules.includes(id)) return true;
  const name = id.startsWith("@") ? id.split("/").slice(0, 2).join("/") : id.split("/")[0];
  return EXTERNAL.has(name);
}

export default {
  input: {
    // bin/tenax.js imports main; the health probe's worker is started by its file name.
    main: "dist/cli/main.js",
    "probe-worker": "dist/health/probe-worker.js",
  },
  platform: "node",
  external,
  treeshake: false,
  output: {
    dir: "dist/bundle",
    format: "esm",
    entryFileNames: "[name].js",
    chunkFileNames: "[name]-[hash].js",
    sourcemap: true,
    cleanDir: true,
    minify: false,
  },
};
