// `tenax cron ...` through the real CLI: add with good and bad input (each refusal exits 2 and
// names what is wrong), list, show, runs, pause, resume and remove, for people and with --json;
// and a job added beside a running gateway is in its GET /api/jobs.
import { beforeAll, describe, expect, it } from "vitest";
import { newRun } from "../src/cron/claim.js";
import { putOp, RUN_KIND, readJob } from "../src/cron/records.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild, tenax, tenaxAsync } from "./helpers/cli.js";
import { simProfile, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(requireBuild);

const BERLIN = "cron: { timezone: Europe/Berlin }\n";

function add(home: string, name: string, schedule: string, ...more: string[]) {
  return tenax(home, ["cron", "add", name, "--schedule", schedule, "--prompt", "check the logs", ...more]);
}

/** Two finished runs of `job` written into the store as the engine writes them. */
async function seedRuns(paths: ProfilePaths, job: string): Promise<void> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    const record = await readJob(store, job);
    if (!record) throw new Error(`no job ${job}`);
    const t = Date.UTC(2026, 5, 1, 1, 0);
    const ok = newRun(
      record,
      {
        occurrence: t,
        trigger: "schedule",
        state: "ok",
        started_at: t,
        ended_at: t + 2_500,
        reply: "all clear\nsecond line",
      },
      null,
      t,
    );
    const failed = newRun(
      record,
      {
        occurrence: t + 3_600_000,
        trigger: "catch_up",
        state: "failed",
        missed: true,
        started_at: t + 3_600_000,
        ended_at: t + 3_601_000,
        error: "the provider refused the key",
      },
      null,
      t + 3_600_000,
    );
    await store.write([putOp(RUN_KIND, ok.run_key, ok, t), putOp(RUN_KIND, failed.run_key, failed, t)]);
  } finally {
    await releaseStore(store);
  }
}

describe("tenax cron add", () => {
  it("adds a job in the profile's zone and prints its next 3 due times there", () => {
    const { home } = profileWith(BERLIN);
    const r = add(home, "nightly", "0 3 * * *");
    expect(r.status, r.stderr).toBe(0);
    const due = r.stdout.split("\n").filter((l) => /^ {2}\d{4}-\d\d-\d\d 03:00 Europe\/Berlin \(in /.test(l));
    expect(due).toHaveLength(3);

    const json = add(home, "hourly", "every 1h", "--json", "--no-catch-up", "--disabled", "--timeout", "30");
    expect(json.status, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      job: { enabled: boolean; catch_up: boolean; timeout_s: number; schedule: { timezone: string } };
    };
    expect(doc.job).toMatchObject({ enabled: false, catch_up: false, timeout_s: 30 });
    expect(doc.job.schedule.timezone).toBe("Europe/Berlin");
  });

  it("refuses bad input with exit 2 and a message naming what is wrong", async () => {
    const { home } = profileWith(
      'model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "http://127.0.0.1:9" }\n',
    );
    const cases: Array<[string[], RegExp]> = [
      [["ok", "--schedule", "61 3 * * *"], /minute: 61/],
      [["ok", "--schedule", "TZ=Mars/Base 0 3 * * *"], /unknown time zone "Mars\/Base"/],
      [["ok", "--schedule", "0 3 * * * *"], /has 6 fields; a schedule takes 5/],
      [["ok", "--schedule", "every 10s"], /shorter than a minute/],
      [["ok", "--schedule", "every 1h", "--timeout", "ten"], /--timeout "ten" is not a whole number/],
      [["ok", "--schedule", "every 1h", "--timeout", "0"], /a timeout of 0 s is not allowed/],
      [["bad name", "--schedule", "every 1h"], /"bad name" is not a job name/],
      [["ok", "--schedule", "every 1h", "--deliver", "ftp://x"], /"ftp:\/\/x" is not a delivery target/],
      [
        ["ok", "--schedule", "every 1h", "--deliver", "telegram:42"],
        /delivery to telegram:42: platforms.telegram is not in config.yaml \(configured: none\)/,
      ],
      [
        ["ok", "--schedule", "every 1h", "--deliver", "telegram:@me"],
        /names no Telegram chat; a chat id is a number/,
      ],
      [
        ["ok", "--schedule", "every 1h", "--model", "other/echo"],
        /"other" is not a configured provider \(configured: sim\)/,
      ],
      [
        ["ok", "--schedule", "every 1h", "--model", "sim/nope"],
        /"nope" is not a model of provider sim \(its models: echo\)/,
      ],
    ];
    // At once: none of them writes anything. The store is made first: processes that all open a
    // store that does not exist yet can race to create its tables.
    expect(tenax(home, ["cron", "list"]).status).toBe(0);
    const results = await Promise.all(
      cases.map(([args]) => {
        const [name = "", ...rest] = args;
        return tenaxAsync(home, ["cron", "add", name, "--prompt", "x", ...rest]);
      }),
    );
    cases.forEach(([args, message], i) => {
      const r = results[i];
      expect(r?.status, `${args.join(" ")}: ${r?.stderr}`).toBe(2);
      expect(r?.stderr).toMatch(message);
    });
    // A --json refusal is still one document on stdout.
    const json = tenax(home, ["cron", "add", "ok", "--prompt", "x", "--schedule", "every 10s", "--json"]);
    expect(json.status).toBe(2);
    expect((JSON.parse(json.stdout) as { error: { code: string } }).error.code).toBe("job_invalid");
    expect(JSON.parse(tenax(home, ["cron", "list", "--json"]).stdout)).toEqual({ jobs: [] });
  }, 30_000);
});

describe("tenax cron list, show, runs, pause, resume, remove", () => {
  it("shows jobs and runs for people and as JSON, and changes them", async () => {
    const paths = profileWith(BERLIN);
    const { home } = paths;
    expect(tenax(home, ["cron", "list"]).stdout).toMatch(/no cron jobs yet; add one with: tenax cron add/);
    expect(add(home, "report", "0 3 * * *").status).toBe(0);
    expect(add(home, "often", "every 30m").status).toBe(0);
    await seedRuns(paths, "report");

    // The reads change nothing: they run at once, and are checked one by one below.
    const [list, listJson, show, showJson, runsText, runsLimited, badLimit] = await Promise.all([
      tenaxAsync(home, ["cron", "list"]),
      tenaxAsync(home, ["cron", "list", "--json"]),
      tenaxAsync(home, ["cron", "show", "report"]),
      tenaxAsync(home, ["cron", "show", "report", "--json"]),
      tenaxAsync(home, ["cron", "runs", "report"]),
      tenaxAsync(home, ["cron", "runs", "report", "--json", "--limit", "1"]),
      tenaxAsync(home, ["cron", "runs", "report", "--limit", "lots"]),
    ]);
    expect(list.status, list.stderr).toBe(0);
    const [header = "", ...rows] = list.stdout.trim().split("\n");
    expect(header).toMatch(/^NAME\s+SCHEDULE\s+NEXT DUE\s+LAST\s+STREAK\s+ENABLED$/);
    const report = rows.find((r) => r.startsWith("report")) ?? "";
    expect(report).toMatch(/0 3 \* \* \*\s+\d{4}-\d\d-\d\d 03:00 Europe\/Berlin \(in [\d.]+ (s|min|h|d)\)/);
    expect(report).toMatch(/failed: the provider refused the key\s+0\s+yes$/);
    expect(rows.find((r) => r.startsWith("often"))).toMatch(/\(in (29|30) min\)/);
    const listed = JSON.parse(listJson.stdout) as {
      jobs: Array<{ name: string; next_due_at: number; last: { state: string } | null }>;
    };
    expect(listed.jobs.map((j) => j.name).sort()).toEqual(["often", "report"]);
    expect(listed.jobs.find((j) => j.name === "report")?.last?.state).toBe("failed");

    expect(show.status, show.stderr).toBe(0);
    for (const field of [
      "schedule",
      "next due",
      "prompt",
      "model",
      "deliver",
      "timeout",
      "folder",
      "catch up",
      "streak",
    ])
      expect(show.stdout).toMatch(new RegExp(`^${field} +\\S`, "m"));
    expect(show.stdout).toMatch(/last runs:\n {2}2026-06-01 04:00 Europe\/Berlin {2}failed missed/);
    const shown = JSON.parse(showJson.stdout) as {
      job: { name: string };
      runs: unknown[];
    };
    expect(shown.job.name).toBe("report");
    expect(shown.runs).toHaveLength(2);

    // One line per run, newest first: occurrence in the job's zone, state, missed, duration, what it said.
    const runs = runsText.stdout.trim().split("\n");
    expect(runs).toEqual([
      "2026-06-01 04:00 Europe/Berlin  failed missed  1.0 s  catch_up  the provider refused the key",
      "2026-06-01 03:00 Europe/Berlin  ok  2.5 s  schedule  all clear",
    ]);
    const runsJson = JSON.parse(runsLimited.stdout) as {
      runs: Array<{ state: string }>;
    };
    expect(runsJson.runs.map((r) => r.state)).toEqual(["failed"]);
    expect([badLimit.status, badLimit.stderr]).toEqual([
      2,
      'error: --limit "lots" is not a whole number\ne.g. --limit 20\n',
    ]);

    const paused = tenax(home, ["cron", "pause", "often"]);
    expect(paused.stdout).toMatch(/job often is paused/);
    expect(tenax(home, ["cron", "list"]).stdout).toMatch(/^often\s+every 30m\s+paused\s+-\s+0\s+no$/m);
    const resumed = JSON.parse(tenax(home, ["cron", "resume", "often", "--json"]).stdout) as {
      job: { enabled: boolean };
    };
    expect(resumed.job.enabled).toBe(true);

    expect(tenax(home, ["cron", "remove", "often", "--json"]).stdout).toMatch(/"removed": "often"/);
    const gone = tenax(home, ["cron", "show", "often"]);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toMatch(/there is no cron job named "often"\ntenax cron list shows the jobs/);
    expect(tenax(home, ["cron", "pause", "often"]).status).toBe(1);
  }, 30_000);
});

describe("tenax cron beside a gateway", () => {
  it("a job added while the gateway runs is in its GET /api/jobs", async () => {
    const { home } = await simProfile();
    const gateway = await startGateway(home);
    try {
      const added = await tenaxAsync(home, [
        "cron",
        "add",
        "beside",
        "--schedule",
        "every 1h",
        "--prompt",
        "x",
      ]);
      expect(added.status, added.stderr).toBe(0);
      const response = await gateway.fetch("/api/jobs");
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        object: string;
        data: Array<{ name: string; object: string }>;
      };
      expect(body.object).toBe("list");
      expect(body.data.map((j) => [j.object, j.name])).toEqual([["job", "beside"]]);
    } finally {
      gateway.child.kill("SIGTERM");
      await gateway.exited;
    }
  }, 30_000);
});
