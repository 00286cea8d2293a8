// What the Telegram outage row saw, and whether it passes: kept apart from the scenario that
// gathers it so that the judgment can be checked against a doctored observation without a gateway.

/** The gateway's `platforms` health component for Telegram at one moment. */
export interface PlatformSnapshot {
  status: string;
  connected: boolean | null;
  pending: number;
}

export interface OutageObservation {
  outage_ms: number;
  /** The answers the chat must hold at the end, in order (the baseline's first). */
  expected: string[];
  /** What the chat holds once the backlog drained (and a moment more, for a late duplicate). */
  answers: string[];
  /** Messages the user sent while the Bot API was down. */
  sent_during: number;
  /** The most updates seen waiting at the simulator (not yet fetched) during the outage. */
  queued_at_telegram: number;
  model_calls: number;
  /** platform_delivery_failed events with layer `platforms` on the gateway's feed. */
  failures_on_feed: number;
  given_up_on_feed: number;
  /** The component's first reading that showed the outage, or null when none did. */
  health_during: PlatformSnapshot | null;
  /** Its reading once the backlog drained. */
  health_after: PlatformSnapshot | null;
  /** From the outage's lift to the last answer delivered; null when not all came. */
  drain_ms: number | null;
}

export interface OutageVerdict {
  ok: boolean;
  detail: string;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function shown(snapshot: PlatformSnapshot | null): string {
  if (snapshot === null) return "never showed it";
  const link =
    snapshot.connected === null ? "connection unknown" : snapshot.connected ? "connected" : "not connected";
  return `${snapshot.status} (${link}, ${snapshot.pending} waiting)`;
}

export function judgeOutage(o: OutageObservation): OutageVerdict {
  const counts = new Map<string, number>();
  for (const answer of o.answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
  const duplicates = [...counts.values()].reduce((n, c) => n + c - 1, 0);
  const lost = o.expected.filter((e) => !counts.has(e)).length;
  const strangers = o.answers.filter((a) => !o.expected.includes(a)).length;
  const inOrder = o.answers.length === o.expected.length && o.answers.every((a, i) => a === o.expected[i]);
  const during = o.health_during;
  const after = o.health_after;
  const problems: string[] = [];
  if (!inOrder)
    problems.push(`the chat holds ${JSON.stringify(o.answers)}, expected ${JSON.stringify(o.expected)}`);
  if (o.queued_at_telegram < o.sent_during)
    problems.push(`only ${o.queued_at_telegram} of the ${o.sent_during} message(s) waited at Telegram`);
  if (o.model_calls !== o.expected.length)
    problems.push(`${o.model_calls} model call(s) for ${o.expected.length} message(s)`);
  if (o.failures_on_feed === 0) problems.push("no platform_delivery_failed on the event feed");
  if (o.given_up_on_feed > 0) problems.push(`${o.given_up_on_feed} message(s) given up`);
  if (during === null || during.status === "ok" || during.connected !== false || during.pending < 1)
    problems.push(`/health's platforms component did not show the outage: ${shown(during)}`);
  if (after === null || after.status !== "ok" || after.connected !== true || after.pending !== 0)
    problems.push(`/health's platforms component after the drain: ${shown(after)}`);
  const delivered = o.expected.length - lost;
  const detail = [
    `${o.sent_during} message(s) sent during the ${seconds(o.outage_ms)} outage (${o.queued_at_telegram} waited at Telegram)`,
    `${delivered} of ${o.expected.length} answers delivered${inOrder ? ", in order" : ""}, duplicates ${duplicates}, lost ${lost}${strangers > 0 ? `, ${strangers} unexpected` : ""}`,
    `${o.model_calls} model call(s)`,
    `feed: ${o.failures_on_feed} platform_delivery_failed(platforms), ${o.given_up_on_feed} given up`,
    `/health platforms during: ${shown(during)}, after: ${shown(after)}`,
    o.drain_ms === null
      ? "the backlog never drained"
      : `backlog drained ${seconds(o.drain_ms)} after the lift`,
    ...problems.map((p) => `FAILED: ${p}`),
  ].join("; ");
  return { ok: problems.length === 0, detail };
}
