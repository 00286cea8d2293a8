// A profile's folder made ready for a command that writes into it. The first time (a fresh
// machine, a new TENAX_HOME) it is created, mode 0700, with the folders every profile has; a
// named profile is never made here: that is `tenax profile create`, which gives it its own ports.
import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileWriteError, nearestExisting } from "../profile/fs-errors.js";
import { DEFAULT_PROFILE, PROFILE_FOLDERS, type ProfilePaths } from "../profile/paths.js";
import { requireProfile } from "./profiles.js";

/**
 * Make sure the profile's folder exists; returns the paths. A folder that is already there is
 * left as it is (the spool and the log make their own sub-folder when they first write), so a
 * read-only home still gets the error of the layer that needed to write, not one from here.
 */
export function ensureProfileHome(paths: ProfilePaths): ProfilePaths {
  if (existsSync(paths.dir)) return paths;
  if (paths.name !== DEFAULT_PROFILE) requireProfile(paths.home, paths.name);
  try {
    // mkdir's mode passes through the umask; these folders hold transcripts and keys, so their
    // mode is set exactly afterwards.
    mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
    chmodSync(paths.dir, 0o700);
    for (const name of PROFILE_FOLDERS) {
      const sub = join(paths.dir, name);
      mkdirSync(sub, { recursive: true, mode: 0o700 });
      chmodSync(sub, 0o700);
    }
  } catch (error) {
    throw fileWriteError(
      error,
      `create the profile folder ${paths.dir}`,
      paths.dir,
      nearestExisting(paths.dir),
    );
  }
  return paths;
}
