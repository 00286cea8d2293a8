// Which of the store's running turns this process may end or take: the turns it gave up on with
// their row still running (their end could not be written: the store refused it) are dead whatever
// their lease says, so `reap` marks them interrupted at once and a new turn in their session need
// not wait out the lease; an interrupted turn is taken over at a new lease epoch to resume it.
// A given-up turn is forgotten once the store shows it no longer running under this process's
// lease, whoever ended or took it, or once this process takes it over again.
import type { Owners } from "../core/owners.js";
import { turnRunningDetail } from "../store/one-running-turn.js";
import type { StorePort } from "../store/port.js";
import { type ReapedTurn, type ReapOptions, reapDeadTurns } from "./reap.js";
import { type ResumePoint, restartTurn } from "./turn-resume.js";

export interface TurnOwnershipOptions {
  store: StorePort;
  owners: Owners;
  /** Now, in the clock leases are written and judged in. */
  leaseNow: () => number;
  leaseSeconds: number;
}

export class TurnOwnership {
  /** Turns this process gave up on while their row still says running (their end was not written). */
  private readonly given = new Set<string>();

  constructor(private readonly options: TurnOwnershipOptions) {}

  /** A turn of this process ended with its row still running: nothing runs it any more. */
  abandon(turnId: string): void {
    this.given.add(turnId);
  }

  /** Whether this process gave the turn up with its row still running (`abandon`). */
  abandoned(turnId: string): boolean {
    return this.given.has(turnId);
  }

  /**
   * Mark dead turns interrupted (reap.ts): an expired lease, an owner that ended, or a turn this
   * process gave up on. Given-up turns reaped here, or that the store shows ended, are forgotten.
   */
  async reap(options: Omit<ReapOptions, "owners" | "abandoned"> = {}): Promise<ReapedTurn[]> {
    const { store, owners } = this.options;
    const reaped = await reapDeadTurns(store, this.options.leaseNow(), {
      ...options,
      owners,
      abandoned: this.given,
    });
    for (const turn of reaped) this.given.delete(turn.turn_id);
    await this.forgetEnded();
    return reaped;
  }

  /**
   * Take an interrupted turn over for this process (its lease, a new epoch). Refused with
   * `lease_lost` when another process took it first, `turn_running` when its session runs another.
   */
  async takeOver(sessionId: string, turnId: string): Promise<ResumePoint> {
    const { store, owners, leaseSeconds } = this.options;
    const point = await restartTurn(
      store,
      sessionId,
      turnId,
      leaseSeconds * 1000,
      this.options.leaseNow(),
      owners.turnOwner,
    );
    // This process runs it again: it is no longer given up, whoever ended it before.
    this.given.delete(turnId);
    return point;
  }

  /**
   * Start a turn; when its session is held by a turn this process gave up on (nothing runs it),
   * that turn is marked interrupted and the start is tried once more.
   */
  async start<T>(begin: () => Promise<T>): Promise<T> {
    try {
      return await begin();
    } catch (error) {
      const held = turnRunningDetail(error)?.running_turn_id ?? null;
      if (held === null || !this.given.has(held)) throw error;
      if ((await this.reap({ only: new Set([held]) })).length === 0) throw error;
      return await begin();
    }
  }

  /**
   * Forget the given-up turns the store no longer shows running under this process's lease
   * (another process reaped them, or took them over since): one would otherwise be held here for
   * good, and a turn another process resumed reaped by this one at once. Only turns given up
   * before the look are judged by it. Best effort: what was reaped stands either way.
   */
  private async forgetEnded(): Promise<void> {
    if (this.given.size === 0) return;
    const before = [...this.given];
    const mine = this.options.owners.turnOwner;
    let held: Set<string>;
    try {
      const running = await this.options.store.runningTurns();
      held = new Set(running.filter((turn) => turn.lease_owner === mine).map((turn) => turn.id));
    } catch {
      return;
    }
    for (const id of before) if (!held.has(id)) this.given.delete(id);
  }
}
