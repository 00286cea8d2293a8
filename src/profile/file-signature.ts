// Whether a file changed, without reading it: its inode, size and modification time (editors
// often write a new file and rename it over the old one, which changes the inode). "" when the
// file is not there, so one that appears or goes away is a change too.
import { statSync } from "node:fs";

export function fileSignature(file: string): string {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}`;
  } catch {
    return "";
  }
}
