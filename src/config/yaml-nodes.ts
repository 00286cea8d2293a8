// Walking a parsed YAML document by key path: where a key or value sits (line and column), and each
// value scalar with its path, so config errors can point at the exact line.
import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type LineCounter,
  type Node,
  type Scalar,
} from "yaml";

export type KeyPath = readonly PropertyKey[];

export interface Position {
  line: number;
  column: number;
}

/** A key path for people: `providers.main.api_keys[0]`, quoting keys that are not plain words. */
export function formatKeyPath(path: KeyPath): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(String(part))) out += out === "" ? String(part) : `.${String(part)}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out;
}

/**
 * Where the key (`at: "key"`) or value (`at: "value"`) at `path` starts. When the path does not
 * exist (a missing key), the nearest existing parent key is given instead.
 */
export function locate(doc: Document, lines: LineCounter, path: KeyPath, at: "key" | "value"): Position {
  let node = resolve(doc, doc.contents);
  let offset = node?.range?.[0] ?? 0;
  for (const [index, segment] of path.entries()) {
    const last = index === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      const keyOffset = isScalar(pair.key) ? (pair.key.range?.[0] ?? offset) : offset;
      const value = resolve(doc, pair.value as Node | null);
      if (last) {
        offset = at === "key" || !value?.range ? keyOffset : value.range[0];
        break;
      }
      offset = keyOffset;
      node = value;
    } else if (isSeq(node)) {
      const item = resolve(doc, node.items[Number(segment)] as Node | undefined);
      if (!item?.range) break;
      offset = item.range[0];
      node = item;
    } else {
      break;
    }
  }
  const pos = lines.linePos(offset);
  return { line: pos.line, column: pos.col };
}

/** Visit every scalar that is a value (not a map key), with its key path. */
export function forEachValueScalar(doc: Document, visit: (scalar: Scalar, path: KeyPath) => void): void {
  const walk = (node: unknown, path: PropertyKey[]): void => {
    if (isScalar(node)) visit(node, path);
    else if (isMap(node)) {
      for (const pair of node.items) {
        if (isScalar(pair.key)) walk(pair.value, [...path, String(pair.key.value)]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        walk(item, [...path, i]);
      });
    }
  };
  walk(doc.contents, []);
}

/** The key path of the map key that starts at `offset`, if any (used to name duplicate keys). */
export function keyPathAtOffset(doc: Document, offset: number): KeyPath | undefined {
  const search = (node: unknown, path: PropertyKey[]): KeyPath | undefined => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isScalar(pair.key)) continue;
        const here = [...path, String(pair.key.value)];
        if (pair.key.range?.[0] === offset) return here;
        const found = search(pair.value, here);
        if (found) return found;
      }
    } else if (isSeq(node)) {
      for (const [i, item] of node.items.entries()) {
        const found = search(item, [...path, i]);
        if (found) return found;
      }
    }
    return undefined;
  };
  return search(doc.contents, []);
}

function resolve(doc: Document, node: Node | null | undefined): Node | undefined {
  if (node === null || node === undefined) return undefined;
  if (isAlias(node)) return (node.resolve(doc) as Node | undefined) ?? undefined;
  return node;
}
