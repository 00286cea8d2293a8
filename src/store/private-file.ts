// The store's files hold every transcript: they are created readable by their owner only (0600),
// whatever the umask and whether or not the profile folder is private. SQLite gives a database's
// -wal and -shm files the mode of the database file, so creating that one right is enough.
import { closeSync, openSync } from "node:fs";

/** Create `path` empty with mode 0600 when it does not exist; an existing file is left as it is. */
export function createPrivateFile(path: string): void {
  closeSync(openSync(path, "a", 0o600));
}
