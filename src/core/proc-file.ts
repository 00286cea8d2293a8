// Reading small /proc files fast: they report size 0, so readFileSync grows a buffer by rounds and
// costs about ten times a plain open, read and close into a buffer kept for every read (measured:
// 300 environ files in 22 ms against 2.6 ms). A scan of /proc reads hundreds of them.
import { closeSync, openSync, readSync } from "node:fs";

let shared = Buffer.allocUnsafe(64 * 1024);

/**
 * The whole file, or null when it cannot be read (gone, another user's). The bytes live in a
 * buffer shared by every call: use them before the next call.
 */
export function readProcFile(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    let length = 0;
    for (;;) {
      if (length === shared.length) {
        const grown = Buffer.allocUnsafe(shared.length * 2);
        shared.copy(grown, 0, 0, length);
        shared = grown;
      }
      const read = readSync(fd, shared, length, shared.length - length, null);
      if (read === 0) break;
      length += read;
    }
    return shared.subarray(0, length);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
