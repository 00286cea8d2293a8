// What a gateway's start says about the stop before it. The clean-shutdown marker says the last
// stop drained; without it, the store's record of the last gateway start (kind `gateway_start`,
// written by every start) tells a store that had a gateway which did not stop cleanly (a crash,
// `kill -9`, a drain that ran out) from one that never had a gateway: a first start, which is
// nothing to warn about.
import type { StorePort } from "../store/port.js";

export const GATEWAY_START_KIND = "gateway_start";
const KEY = "last";

export interface GatewayStartRecord {
  pid: number;
  started_at: number;
}

export async function lastGatewayStart(store: StorePort): Promise<GatewayStartRecord | null> {
  return await store.getRecord<GatewayStartRecord>(GATEWAY_START_KIND, KEY);
}

export function recordGatewayStart(store: StorePort, start: GatewayStartRecord): Promise<void> {
  return store.putRecord(GATEWAY_START_KIND, KEY, start);
}

/** The line a start prints about the last stop. */
export function lastStopLine(clean: boolean, previous: GatewayStartRecord | null): string {
  if (clean) return "the last gateway stop was clean";
  if (previous === null) return "first gateway start on this profile's store";
  return `no clean-shutdown marker: the last gateway stop was not clean (that gateway, pid ${previous.pid}, started ${new Date(previous.started_at).toISOString()})`;
}
