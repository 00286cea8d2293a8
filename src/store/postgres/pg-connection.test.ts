// What may be printed of a database URL (never its password), and how driver errors are sorted:
// the database away, a transaction to run again, or anything else (passed on as it is).
import { describe, expect, it } from "vitest";
import { classifyPgError } from "./pg-connection.js";
import { urlWithoutPassword } from "./pg-url.js";

describe("urlWithoutPassword", () => {
  it("removes the password from the user part and from the query", () => {
    expect(urlWithoutPassword("postgres://tenax:s3cret@db.example:5432/tenax")).toBe(
      "postgres://tenax@db.example:5432/tenax",
    );
    expect(urlWithoutPassword("postgresql://u@h/d?password=s3cret&sslmode=require")).toBe(
      "postgresql://u@h/d?sslmode=require",
    );
    expect(urlWithoutPassword("postgres://u@h:5/d")).toBe("postgres://u@h:5/d");
  });

  it("removes a password from a key=value connection string", () => {
    const printed = urlWithoutPassword("host=db user=tenax password=s3cret dbname=tenax");
    expect(printed).not.toContain("s3cret");
    expect(printed).toContain("host=db");
  });
});

describe("classifyPgError", () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });

  it("sorts by what the store must do", () => {
    expect(classifyPgError(coded("40001"))).toBe("retry");
    expect(classifyPgError(coded("40P01"))).toBe("retry");
    for (const code of ["57P01", "57P03", "08006", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT"])
      expect(classifyPgError(coded(code))).toBe("unavailable");
    expect(classifyPgError(new Error("Connection terminated unexpectedly"))).toBe("unavailable");
    expect(classifyPgError(new Error("timeout exceeded when trying to connect"))).toBe("unavailable");
    // The client gave up on a reply (query_timeout): the connection's state is unknown, so it goes.
    expect(classifyPgError(new Error("Query read timeout"))).toBe("unavailable");
    expect(classifyPgError(coded("23505"))).toBe("other");
    expect(classifyPgError("weird")).toBe("other");
  });
});
