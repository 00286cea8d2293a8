// Polling a condition instead of sleeping a fixed time: look again every `everyMs` until it holds,
// or fail naming what was awaited and for how long (and, for a value, the last one seen).

/** Resolves with the first value `look` gives that `ok` accepts; throws after `ms`. */
export async function untilValue<T>(
  look: () => T | Promise<T>,
  ok: (value: T) => boolean,
  ms: number,
  what: string,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await look();
    if (ok(value)) return value;
    if (Date.now() > deadline) {
      const last = typeof value === "boolean" ? "" : `; last: ${JSON.stringify(value)}`;
      throw new Error(`not true within ${ms} ms: ${what}${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Resolves once `condition` holds; throws `not true within MS ms: WHAT` after `ms`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  ms: number,
  what: string,
  everyMs = 20,
): Promise<void> {
  await untilValue(condition, (holds) => holds, ms, what, everyMs);
}
