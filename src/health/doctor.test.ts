import { describe, expect, it } from "vitest";
import { execStart, inWalResetBugBand } from "./doctor-checks.js";
import { listeningInodes } from "./doctor-ports.js";

describe("doctor helpers", () => {
  it("places SQLite versions in or out of the WAL-reset bug band (3.7.0 to 3.51.2)", () => {
    expect(inWalResetBugBand("3.6.23")).toBe(false);
    expect(inWalResetBugBand("3.7.0")).toBe(true);
    expect(inWalResetBugBand("3.40.1")).toBe(true);
    expect(inWalResetBugBand("3.51.2")).toBe(true);
    expect(inWalResetBugBand("3.51.3")).toBe(false);
    expect(inWalResetBugBand("3.53.2")).toBe(false);
  });

  it("reads a unit's last ExecStart, quotes and systemd prefixes removed", () => {
    const unit =
      '[Service]\nExecStart=/bin/false\nExecStart=-"/opt/my node/bin/node" /srv/tenax/bin/tenax.js gateway run\n';
    expect(execStart(unit)).toEqual(["/opt/my node/bin/node", "/srv/tenax/bin/tenax.js", "gateway", "run"]);
    expect(execStart("[Service]\nType=simple\n")).toBeNull();
  });

  it("finds only listening sockets on the port in a /proc/net/tcp table", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:21C2 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1",
      "   1: 0100007F:21C2 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 222 1",
      "   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1",
    ].join("\n");
    expect(listeningInodes(table, 8642)).toEqual(["111"]);
    expect(listeningInodes(table, 8080)).toEqual(["333"]);
    expect(listeningInodes(table, 9000)).toEqual([]);
  });
});
