// Where a path really lands once every symlink on the way is followed, even for a file that does
// not exist yet: what the file-roots policy judges, so a link (or a dangling one) that leads out
// of the roots counts as outside.
import { readlink, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";

/** Linux gives up after 40 links on one path; so do we, judging the rest as written. */
const MAX_LINK_HOPS = 40;

/**
 * The real path of `path`: the real path of its nearest part that exists, with the parts that do
 * not exist yet appended. A dangling link is followed by its text, since writing through it
 * would create its target.
 */
export async function realPathOf(path: string): Promise<string> {
  let head = resolve(path);
  let tail: string[] = [];
  let hops = 0;
  for (;;) {
    const real = await realpath(head).catch(() => null);
    if (real !== null) return join(real, ...tail);
    const link = hops < MAX_LINK_HOPS ? await readlink(head).catch(() => null) : null;
    if (link !== null) {
      hops++;
      head = resolve(dirname(head), link);
      continue;
    }
    const parent = dirname(head);
    if (parent === head) return join(head, ...tail);
    tail = [basename(head), ...tail];
    head = parent;
  }
}

/** `path` is `folder` or lies under it (both absolute and normalized). */
export function isInside(path: string, folder: string): boolean {
  if (path === folder) return true;
  return path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}
