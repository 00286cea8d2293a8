// The one mapping from a zod failure to the OpenAI error shape: 400 `invalid_request_error`, the
// field path as a client writes it (`messages[0].role`) and what was expected. A key the schema
// does not know is `unknown_field`; a check that chooses its own code (`unsupported_field`) passes
// it as the issue's `params.code`; anything else is `invalid_field`.
import type { ZodError, ZodType, z } from "zod";
import { badRequest, type HttpError } from "./http-error.js";

type Issue = ZodError["issues"][number];

/** `value` checked against `schema`; the 400 that names the field otherwise. */
export function parseWith<S extends ZodType>(
  schema: S,
  value: unknown,
  where = "the request body",
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw zodHttpError(parsed.error, where);
}

export function isZodError(error: unknown): error is ZodError {
  return (
    error instanceof Error && error.name === "ZodError" && Array.isArray((error as Partial<ZodError>).issues)
  );
}

export function zodHttpError(error: ZodError, where = "the request body"): HttpError {
  const issues = error.issues;
  const first = issues[0];
  const code = first === undefined ? "invalid_field" : codeOf(first);
  // One code per answer: the issues that share the first one's code, each with its field.
  const shown = issues.filter((issue) => codeOf(issue) === code);
  return badRequest(code, shown.map((issue) => describe(issue, where)).join("; "), {
    error: { param: first === undefined ? null : fieldPath(first.path) || null },
  });
}

function codeOf(issue: Issue): string {
  if (issue.code === "unrecognized_keys") return "unknown_field";
  const own = issue.code === "custom" ? (issue.params as { code?: unknown } | undefined)?.code : undefined;
  return typeof own === "string" ? own : "invalid_field";
}

function describe(issue: Issue, where: string): string {
  const field = fieldPath(issue.path);
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((k) => (field === "" ? k : `${field}.${k}`));
    return `unknown field${keys.length > 1 ? "s" : ""} in ${where}: ${keys.join(", ")}`;
  }
  // A message that already names its field (a custom check's) is kept as it is.
  if (field === "" || issue.message.startsWith(field)) return issue.message;
  return `${field}: ${issue.message}`;
}

/** A path as a client writes it: messages[0].content[1].text. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path)
    out += typeof part === "number" ? `[${part}]` : out === "" ? String(part) : `.${String(part)}`;
  return out;
}
