// The shift every rotated log makes when NAME is full: NAME.(keep-1) → NAME.keep … NAME → NAME.1,
// the oldest dropped; with keep 0, NAME is removed and nothing is kept. Written once for the
// gateway log (log-file.ts) and the audit trail (append-log.ts), which differ only in who may
// rotate (one holder of the file, or whichever process takes the lock).
import { existsSync, renameSync, rmSync } from "node:fs";

export function shiftRotated(file: string, keep: number): void {
  if (keep <= 0) {
    rmSync(file, { force: true });
    return;
  }
  rmSync(`${file}.${keep}`, { force: true });
  for (let n = keep - 1; n >= 1; n--)
    if (existsSync(`${file}.${n}`)) renameSync(`${file}.${n}`, `${file}.${n + 1}`);
  renameSync(file, `${file}.1`);
}
