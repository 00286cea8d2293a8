// A turn of `tenax chat -q` whose provider hangs mid-stream: the chat tells the stall as it
// happens, and at agent.turn_deadline the turn is ended and failed (code turn_deadline), with the
// error line that says so and what to do, and the process exits 1 with nothing left running.
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

describe("tenax chat and agent.turn_deadline", () => {
  it("tells the stall, then ends the turn at its deadline with an error line", async () => {
    const paths = profileWith(
      [
        "model: { provider: sim, name: echo }",
        "providers:",
        "  sim:",
        "    type: simulator",
        "    script:",
        "      - { type: hang, phase: mid_stream, after_chunks: 1 }",
        "agent: { stall_after: 1, turn_deadline: 3 }",
        "",
      ].join("\n"),
    );
    const plain = await tenaxAsync(paths.home, ["chat", "-q", "wait for it"]);
    expect(plain.status).toBe(1);
    expect(plain.stderr).toMatch(
      /\[lifecycle\] turn \S+ of session \S+ is stalled: no progress for .* \(waiting on the provider call\); end it with: tenax sessions stop \S+/,
    );
    expect(plain.stderr).toContain(
      "error: turn failed (interrupt layer): the turn was ended: it ran past agent.turn_deadline (3 s) while waiting on the provider call; nothing of it runs any more",
    );
    expect(plain.stderr).toMatch(/what to do: .*raise agent.turn_deadline/);
  }, 30_000);
});
