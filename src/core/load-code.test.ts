import { describe, expect, it } from "vitest";
import { TenaxError } from "./errors.js";
import { loadCode } from "./load-code.js";

describe("loadCode", () => {
  it("hands back the module it loaded", async () => {
    const loaded = await loadCode("the errors", () => import("./errors.js"));
    expect(loaded.TenaxError).toBe(TenaxError);
  });

  it("turns a module that cannot load into an error naming it and the fix", async () => {
    const failure = await loadCode(
      "the PostgreSQL store engine",
      () => import("./no-such-module.js" as string),
    ).catch((e: unknown) => e);
    expect(TenaxError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "code_load_failed", exitCode: 1 });
    expect((failure as Error).message).toMatch(
      /^could not load the code of the PostgreSQL store engine: .*no-such-module/,
    );
    expect((failure as TenaxError).hint).toContain("npm install");
  });
});
