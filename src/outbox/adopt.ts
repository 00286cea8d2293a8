// Entries an earlier Tenax kept under a kind of their own, moved into the outbox: each as one
// write that claims the new key (only if absent) and deletes the old record, so two processes
// adopting at once move each entry once; one the channel cannot read is left where it is.
import type { StorePort } from "../store/port.js";
import { claimOp, isRecordConflict, putOp } from "../store/record-ops.js";
import type { LegacyEntries } from "./channel.js";
import { OUTBOX_KIND } from "./entry.js";

export async function adoptLegacy(
  store: StorePort,
  legacy: LegacyEntries,
  now: () => number,
): Promise<number> {
  let moved = 0;
  for (const row of await store.listRecords(legacy.kind)) {
    const entry = legacy.adopt(row.value);
    if (entry === null) continue;
    const at = Math.max(now(), row.updated_at);
    const remove = putOp(legacy.kind, row.key, null, at);
    try {
      await store.write([claimOp(OUTBOX_KIND, entry.key, entry, null, at), remove]);
      moved++;
    } catch (error) {
      // Another process moved it first: only the earlier record is left to remove.
      if (!isRecordConflict(error)) throw error;
      await store.write([remove]);
    }
  }
  return moved;
}
