import { describe, expect, it } from "vitest";
import { Guardrails } from "./guardrails.js";

const ok = { failed: false, poller: false };
const failed = { failed: true, poller: false };

describe("Guardrails", () => {
  it("halts on the same call with the same result several times in a row", () => {
    const g = new Guardrails({ identical_call_limit: 3, failing_call_limit: 2 });
    expect(g.after("read_file", '{"path":"a"}', "same", ok).action).toBe("continue");
    // Same meaning, other spelling: still the same call.
    expect(g.after("read_file", '{ "path": "a" }', "same", ok).action).toBe("continue");
    const third = g.after("read_file", '{"path":"a"}', "same", ok);
    expect(third).toMatchObject({ action: "halt", message: expect.stringContaining("3 times in a row") });
  });

  it("a changed result or another call resets the streak", () => {
    const g = new Guardrails({ identical_call_limit: 3, failing_call_limit: 2 });
    g.after("read_file", '{"path":"a"}', "v1", ok);
    g.after("read_file", '{"path":"a"}', "v1", ok);
    expect(g.after("read_file", '{"path":"a"}', "v2", ok).action).toBe("continue");
    expect(g.after("read_file", '{"path":"a"}', "v2", ok).action).toBe("continue");
    g.after("write_file", '{"path":"b"}', "x", ok);
    expect(g.after("read_file", '{"path":"a"}', "v2", ok).action).toBe("continue");
  });

  it("never halts a poller", () => {
    const g = new Guardrails({ identical_call_limit: 2, failing_call_limit: 2 });
    for (let i = 0; i < 10; i++) {
      expect(
        g.after("process", '{"action":"poll","id":"p1"}', "running", { failed: false, poller: true }).action,
      ).toBe("continue");
    }
  });

  it("blocks a call that keeps failing the same way, and a success lifts it", () => {
    const g = new Guardrails({ identical_call_limit: 5, failing_call_limit: 2 });
    expect(g.before("terminal", '{"command":"make"}').action).toBe("run");
    g.after("terminal", '{"command":"make"}', "error 1", failed);
    expect(g.before("terminal", '{"command":"make"}').action).toBe("run");
    g.after("terminal", '{"command":"make"}', "error 2", failed);
    expect(g.before("terminal", '{"command":"make"}')).toMatchObject({
      action: "block",
      message: expect.stringContaining("failed 2 times in a row"),
    });
    // Other arguments are another call.
    expect(g.before("terminal", '{"command":"make test"}').action).toBe("run");
    g.after("terminal", '{"command":"make"}', "built", ok);
    expect(g.before("terminal", '{"command":"make"}').action).toBe("run");
  });
});
