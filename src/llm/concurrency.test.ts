import { describe, expect, it } from "vitest";
import { seededRandom } from "../core/deps.js";
import { ConcurrencyLimiter } from "./concurrency.js";

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ConcurrencyLimiter", () => {
  it("never has more than max in flight under 200 concurrent tasks of random length", async () => {
    const seed = Number(process.env.TENAX_SEED ?? Date.now() % 2 ** 31);
    console.log(`concurrency seed: ${seed} (rerun with TENAX_SEED=${seed})`);
    const random = seededRandom(seed);
    const limiter = new ConcurrencyLimiter(3);
    let open = 0;
    let peak = 0;
    let done = 0;
    const tasks = Array.from({ length: 200 }, () =>
      limiter
        .run(async () => {
          open++;
          peak = Math.max(peak, open);
          try {
            const ticks = Math.floor(random() * 5);
            for (let i = 0; i < ticks; i++) await tick();
            if (random() < 0.1) throw new Error("task failed");
            done++;
          } finally {
            open--;
          }
        })
        .catch(() => undefined),
    );
    expect(limiter.waiting).toBe(197);
    await Promise.all(tasks);
    expect(peak).toBe(3);
    expect(done).toBeGreaterThan(0);
    expect(limiter.inFlight).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it("serves waiters strictly in arrival order, even against newcomers", async () => {
    const limiter = new ConcurrencyLimiter(1);
    const first = await limiter.acquire();
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) =>
      limiter.acquire().then((release) => {
        order.push(n);
        release();
      }),
    );
    first();
    // A newcomer arriving after the hand-off must still queue behind 2 and 3.
    const late = limiter.acquire().then((release) => {
      order.push(4);
      release();
    });
    await Promise.all([...waits, late]);
    expect(order).toEqual([1, 2, 3, 4]);
    expect(limiter.inFlight).toBe(0);
  });

  it("an aborted waiter leaves the queue at once and never takes a slot", async () => {
    const limiter = new ConcurrencyLimiter(1);
    const held = await limiter.acquire();
    const controller = new AbortController();
    const aborted = limiter.acquire(controller.signal);
    const next = limiter.acquire();
    expect(limiter.waiting).toBe(2);
    const reason = new Error("user pressed ctrl-c");
    controller.abort(reason);
    expect(limiter.waiting).toBe(1);
    await expect(aborted).rejects.toBe(reason);
    held();
    const release = await next;
    expect(limiter.inFlight).toBe(1);
    release();
    expect(limiter.inFlight).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it("rejects at once with an already aborted signal", async () => {
    const limiter = new ConcurrencyLimiter(2);
    await expect(limiter.acquire(AbortSignal.abort("gone"))).rejects.toBe("gone");
    expect(limiter.inFlight).toBe(0);
  });

  it("a release called twice frees one slot only", async () => {
    const limiter = new ConcurrencyLimiter(2);
    const a = await limiter.acquire();
    await limiter.acquire();
    const c = limiter.acquire();
    const d = limiter.acquire();
    a();
    a();
    await c;
    expect(limiter.inFlight).toBe(2);
    expect(limiter.waiting).toBe(1);
    let dGranted = false;
    void d.then(() => {
      dGranted = true;
    });
    await tick();
    expect(dGranted).toBe(false);
  });

  it("refuses a limit below one", () => {
    expect(() => new ConcurrencyLimiter(0)).toThrow(RangeError);
    expect(() => new ConcurrencyLimiter(1.5)).toThrow(RangeError);
  });
});
