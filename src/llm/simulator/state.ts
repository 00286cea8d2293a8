// What a simulator holds between requests: the scripted steps still queued, the record of every
// request it received, and the exchanges still being answered (for idle() and close()).
import type { ServerResponse } from "node:http";
import { parseScript, type SimStep } from "./steps.js";
import type { SimRequestRecord } from "./types.js";

/** One request being answered, from its arrival until its response closes. */
export interface Exchange {
  res: ServerResponse;
  record: SimRequestRecord;
  /** Aborted when the response closes, for whatever reason. */
  closed: AbortSignal;
}

export class SimulatorState {
  private queue: SimStep[] = [];
  private records: SimRequestRecord[] = [];
  private readonly open = new Set<Exchange>();
  private idleWaiters: (() => void)[] = [];

  /** Queue steps for the next chat requests; throws SimulatorScriptError on a bad step. */
  script(steps: unknown): void {
    this.queue.push(...parseScript(steps));
  }

  queued(): number {
    return this.queue.length;
  }

  /** The step for the chat request being answered, if one is queued. */
  nextStep(): SimStep | undefined {
    return this.queue.shift();
  }

  /** The record the next request gets (its seq counts from 1 after start or reset). */
  record(entry: Omit<SimRequestRecord, "seq">): SimRequestRecord {
    const record = { seq: this.records.length + 1, ...entry };
    this.records.push(record);
    return record;
  }

  requests(): SimRequestRecord[] {
    return structuredClone(this.records);
  }

  reset(): void {
    this.queue = [];
    this.records = [];
  }

  opened(exchange: Exchange): void {
    this.open.add(exchange);
  }

  settled(exchange: Exchange): void {
    this.open.delete(exchange);
    if (this.open.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  idle(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Cut every exchange still open, recorded as server_closed. */
  cutOpen(): void {
    for (const exchange of this.open) {
      if (exchange.record.ended === "open") exchange.record.ended = "server_closed";
      exchange.res.destroy();
    }
  }
}
