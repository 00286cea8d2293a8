// Persist, then publish, for events that happen while a write's sync runs: they are held, in
// order, until the write is durable and then passed on; if it never is, nothing is told at all.

/** A listener that holds events until `durable` resolves; `first` go out before them. */
export function heldUntil<E>(
  durable: Promise<unknown>,
  emit: (event: E) => void,
  ...first: E[]
): (event: E) => void {
  let held: E[] | null = [];
  let told = true;
  void durable.then(
    () => {
      const queued = held ?? [];
      held = null;
      for (const event of [...first, ...queued]) emit(event);
    },
    () => {
      // Nothing is told of what was never stored.
      held = null;
      told = false;
    },
  );
  return (event) => {
    if (held !== null) held.push(event);
    else if (told) emit(event);
  };
}
