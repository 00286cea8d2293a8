// Which pages an agent turn's commits write, by table and index: a Tenax gateway (the built CLI, on
// a scratch home, the bench's simulator) answers N turns one at a time, each in a new session as a
// stateless client sends them, and is then killed (SIGKILL, so its WAL is left as it was). The WAL's
// frames are read from the file: each frame names its page, and a commit's last frame says so. A
// copy of the store then names each page's b-tree (SQLite's dbstat, through the sqlite3 command).
// Every page a commit changes is one frame of it, so this is also what each commit writes and syncs.
//
//   npm run build && tsc -p bench/tsconfig.json
//   node dist-bench/bench/wal-pages.js [--turns N]
//
// Needs the sqlite3 command (Debian's sqlite3) for dbstat.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { type Child, launch, printedUrl, stopAll } from "./load-run.js";
import { launchTenax, TENAX_HEADERS, tenaxHome } from "./tenax-gateway.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/** The WAL file's header, and each frame's header before its page (sqlite.org/fileformat2.html). */
const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** The page numbers of each committed transaction in a WAL file, oldest first. */
function walTransactions(wal: Buffer): number[][] {
  const pageSize = wal.readUInt32BE(8);
  const transactions: number[][] = [];
  let current: number[] = [];
  for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= wal.length; at += FRAME_HEADER + pageSize) {
    current.push(wal.readUInt32BE(at));
    // The database's size in pages after a commit: set on a transaction's last frame only.
    if (wal.readUInt32BE(at + 4) !== 0) {
      transactions.push(current);
      current = [];
    }
  }
  return transactions;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { turns: { type: "string", default: "300" } } });
  const turns = Number(values.turns);
  const work = mkdtempSync(join(tmpdir(), "tenax-wal-pages-"));
  const children: Child[] = [];
  try {
    const sim = launch([join(HERE, "gateway-sim-child.js")]);
    children.push(sim);
    const simUrl = await printedUrl("the simulator", sim);
    const home = tenaxHome(work, simUrl, 64, { synchronous: "full" });
    const gateway = await launchTenax(home, { synchronous: "full" });
    children.push(gateway.process);
    const pool = new Pool(new URL(gateway.url).origin, { connections: 1 });
    const body = JSON.stringify({
      model: "tenax",
      messages: [{ role: "user", content: "say something short" }],
    });
    for (let i = 0; i < turns; i++) {
      const res = await pool.request({
        path: "/v1/chat/completions",
        method: "POST",
        headers: TENAX_HEADERS,
        body,
      });
      const text = await res.body.text();
      if (res.statusCode !== 200)
        throw new Error(`turn ${i} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    }
    await pool.close();
    gateway.process.child.kill("SIGKILL");
    await gateway.process.exited;
    const copy = join(work, "copy.db");
    copyFileSync(join(home, "state.db"), copy);
    copyFileSync(join(home, "state.db-wal"), `${copy}-wal`);
    const wal = readFileSync(`${copy}-wal`);
    const names = new Map<number, string>();
    for (const line of execFileSync("sqlite3", [copy, "SELECT pageno, name FROM dbstat"], {
      encoding: "utf8",
    })
      .trim()
      .split("\n")) {
      const [page, name] = line.split("|");
      names.set(Number(page), name ?? "?");
    }
    const transactions = walTransactions(wal);
    // A turn is two commits (its start, its end), and the search index's own commits come between:
    // the last ones of the file, each listed by the b-trees its pages belong to.
    const lines = transactions.slice(-12).map((pages) => {
      const by = new Map<string, number>();
      for (const page of pages) {
        const name = names.get(page) ?? `page ${page} (freed)`;
        by.set(name, (by.get(name) ?? 0) + 1);
      }
      const list = [...by].sort(([a], [b]) => a.localeCompare(b));
      return `${String(pages.length).padStart(3)} pages: ${list.map(([n, c]) => (c > 1 ? `${n} x${c}` : n)).join(", ")}`;
    });
    const sizes = transactions.map((t) => t.length);
    const mean = sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length);
    process.stdout.write(
      `${turns} turns, one at a time, each a new session; ${transactions.length} commits left in the WAL, ${mean.toFixed(1)} pages each on average; the last 12:\n${lines.join("\n")}\n`,
    );
  } finally {
    await stopAll(children);
  }
}

await main();
