// `${VAR}` substitution inside one string value of config.yaml. It runs on parsed scalars, never on
// the raw text, so a variable's value can never change the YAML structure around it.

export type Lookup = (name: string) => string | undefined;

export type Interpolated =
  | { ok: true; value: string; substituted: boolean }
  | { ok: false; problem: string; missing: string[] };

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Expand `${VAR}` and `${VAR:-default}` (the default applies when VAR is unset or empty, as in a
 * POSIX shell); `$${` stands for a literal `${`. Any other `$` is kept as it is.
 */
export function interpolate(text: string, lookup: Lookup): Interpolated {
  let out = "";
  let substituted = false;
  const missing: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("$${", i)) {
      out += "${";
      i += 3;
      continue;
    }
    if (!text.startsWith("${", i)) {
      out += text[i];
      i++;
      continue;
    }
    const close = text.indexOf("}", i + 2);
    if (close < 0)
      return {
        ok: false,
        problem: `a "\${" has no closing "}" (write "$\${" for a literal "\${")`,
        missing: [],
      };
    const inner = text.slice(i + 2, close);
    const sep = inner.indexOf(":-");
    const name = sep < 0 ? inner : inner.slice(0, sep);
    if (!NAME_RE.test(name)) {
      return {
        ok: false,
        problem: `"\${${inner}}" is not a variable reference: use \${NAME} or \${NAME:-default}, NAME being letters, digits and _`,
        missing: [],
      };
    }
    const value = lookup(name);
    if (sep >= 0 && (value === undefined || value === "")) {
      out += inner.slice(sep + 2);
    } else if (value === undefined) {
      missing.push(name);
    } else {
      out += value;
    }
    substituted = true;
    i = close + 1;
  }
  if (missing.length > 0) {
    const names = missing.map((n) => `\${${n}}`).join(", ");
    return { ok: false, problem: `${names} ${missing.length === 1 ? "is" : "are"} not set`, missing };
  }
  return { ok: true, value: out, substituted };
}
