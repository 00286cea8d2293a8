// The advice for a dead gateway follows the way it was started: one started by hand with
// `tenax gateway run --port 0` and then killed gets exactly that command back from `tenax status`
// (with the profile's flag), and that command, run by a shell as printed, brings it back.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { printedCommands, requireBuild, tenaxAsync } from "./helpers/cli.js";
import { startGateway } from "./helpers/gateway.js";
import { startPrinted } from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

process.env.TENAX_API_KEY = randomBytes(16).toString("hex");

describe("advice for a gateway started by hand", () => {
  it("after a crash, names the command that started it, which works as printed", async () => {
    const paths = profileWith(`gateway: { api_key: "\${TENAX_API_KEY}" }\n`, undefined, "work");
    const gateway = await startGateway(
      paths.home,
      ["--profile", "work", "gateway", "run", "--port", "0"],
      [],
    );
    gateway.child.kill("SIGKILL");
    await gateway.exited;

    const status = await tenaxAsync(paths.home, ["--profile", "work", "status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(
      /gateway\s+down\s+not running: gateway pid \d+ is gone without a clean stop \(a crash\); /,
    );
    expect(status.stdout).toContain(
      "next (gateway): start it again as it was started; its turns are resumed on start: tenax --profile work gateway run --port 0\n",
    );
    const command = printedCommands(status.stdout).find((c) => c.includes("gateway run")) ?? "";
    expect(command).toBe("tenax --profile work gateway run --port 0");
    const again = await startPrinted(paths.home, command, "gateway");
    expect(again.stderr()).toMatch(/reclaimed the pid file of gateway pid \d+, which is no longer running/);
    const after = await tenaxAsync(paths.home, ["--profile", "work", "status"]);
    expect(after.stdout).toMatch(new RegExp(`gateway\\s+ok\\s+serving on ${again.url} `));
  });
});
