// Writing a file so that readers see the old content or the new, never half of it: write a temp
// file beside it, flush it to disk, then rename it over the target.
import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

export type WriteFile = (file: string, data: string, mode: number) => Promise<void>;

export const writeFileAtomic: WriteFile = async (file, data, mode) => {
  const temp = join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    const handle = await open(temp, "wx", mode);
    try {
      await handle.writeFile(data, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
};
