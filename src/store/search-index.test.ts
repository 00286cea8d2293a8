import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { SearchIndex } from "./search-index.js";

const opened: SearchIndex[] = [];
afterEach(() => {
  for (const index of opened.splice(0)) index.close();
});

function openIndex(): SearchIndex {
  const index = new SearchIndex(join(tempDir(), "search.db"), "store-1", false);
  expect(index.open()).toBe(true);
  opened.push(index);
  return index;
}

const ids = (index: SearchIndex, word: string) => index.query(`"${word}"`, 10).hits.map((hit) => hit.id);

describe("SearchIndex.apply", () => {
  it("indexing a message again replaces its old words, and no text removes it", () => {
    const index = openIndex();
    index.apply([
      { id: 1, text: "hello world" },
      { id: 2, text: "hello again" },
    ]);
    expect(ids(index, "hello")).toEqual(expect.arrayContaining([1, 2]));
    // A flush cut short by a crash indexes its messages again; a message's text may also change.
    index.apply([{ id: 1, text: "goodbye moon" }]);
    expect(ids(index, "hello")).toEqual([2]);
    expect(ids(index, "moon")).toEqual([1]);
    index.apply([{ id: 2, text: null }]);
    expect(ids(index, "hello")).toEqual([]);
    expect(index.count()).toBe(1);
    expect(index.check()).toBeNull();
  });
});
