// Shell-style globs for search_files' filter, as a regular expression: `*` and `?` stay within one
// path segment, `**` crosses folders, `{a,b}` and `[abc]` work as in the shell. A glob without a
// slash matches the file's name wherever it is (as ripgrep and .gitignore do).

export interface Glob {
  source: string;
  matches(relativePath: string): boolean;
}

const SPECIAL = /[\\^$.|+()]/;

export function compileGlob(glob: string): Glob {
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slash = glob[i + 2] === "/";
        out += slash ? "(?:.*/)?" : ".*";
        i += slash ? 2 : 1;
      } else {
        out += "[^/]*";
      }
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const close = glob.indexOf("]", i + 2);
      if (close === -1) {
        out += "\\[";
        continue;
      }
      let body = glob.slice(i + 1, close);
      if (body.startsWith("!")) body = `^${body.slice(1)}`;
      out += `[${body.replaceAll("\\", "\\\\")}]`;
      i = close;
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) {
      out += "|";
    } else {
      out += SPECIAL.test(c) || c === "{" || c === "}" || c === "]" ? `\\${c}` : c;
    }
  }
  out += ")".repeat(braces);
  const regex = new RegExp(`^${out}$`);
  const byName = !glob.includes("/");
  return {
    source: glob,
    matches: (relativePath) => regex.test(byName ? (relativePath.split("/").at(-1) ?? "") : relativePath),
  };
}
