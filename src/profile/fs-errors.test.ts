import { describe, expect, it } from "vitest";
import { fileReadError, fileWriteError } from "./fs-errors.js";

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed`), { code });
}

describe("fs errors", () => {
  it("says how to fix an unreadable file", () => {
    const error = fileReadError(errno("EACCES"), "/h/config.yaml");
    expect(error.message).toBe("cannot read /h/config.yaml: permission denied");
    expect(error.hint).toContain("ls -l /h/config.yaml");
  });

  it.each([
    ["EACCES", "permission denied", "ls -ld '/my home'"],
    ["EROFS", "read-only file system", "TENAX_HOME"],
    ["ENOSPC", "no space left", "df -h '/my home'"],
  ])("maps %s when writing", (code, message, hint) => {
    const error = fileWriteError(errno(code), "create profile dev", "/my home/profiles/dev", "/my home");
    expect(error.message).toContain(message);
    expect(error.hint).toContain(hint);
    expect(error.exitCode).toBe(1);
  });
});
