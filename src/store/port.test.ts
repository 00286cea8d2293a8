// The SQLite store keeps the port: the writable Store is a StorePort and the read-only StoreReader
// is StoreReads (checked by the compiler), every read answers with a promise, and a read that
// cannot be answered is a rejection, never a throw on the caller's stack.
import { describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import type { StorePort, StoreReads } from "./port.js";
import { openReader, openStore, releaseStore } from "./registry.js";
import type { Store } from "./store.js";
import type { StoreReader } from "./store-reader.js";

// Compile-time: each class is assignable to its port type.
const writerIsPort = (store: Store): StorePort => store;
const readerIsReads = (reader: StoreReader): StoreReads => reader;

describe("the SQLite store keeps the port", () => {
  it("its reads are async on the writer and the reader, and name the engine", async () => {
    const paths = tempProfile();
    const store: StorePort = writerIsPort(await openStore(paths, { integrityCheckTimeoutMs: 0 }));
    try {
      expect(store.engine).toBe("sqlite");
      expect(store.where).toBe(paths.state);
      const id = await store.createSession({ title: "port" });
      await store.appendMessage({ session_id: id, role: "user", content: "hello port" });
      const session = store.getSession(id);
      expect(session).toBeInstanceOf(Promise);
      expect((await session)?.title).toBe("port");

      const reader: StoreReads = readerIsReads(openReader(paths));
      try {
        expect(reader.engine).toBe("sqlite");
        expect(reader.where).toBe(paths.state);
        expect((await reader.getMessages(id)).map((m) => m.content)).toEqual(["hello port"]);
        expect(await reader.resolveSessionId(id.slice(0, 6))).toBe(id);
        // A prefix that names no session is a rejection, not a throw.
        const missing = reader.resolveSessionId("nope");
        expect(missing).toBeInstanceOf(Promise);
        await expect(missing).rejects.toThrow(/no session 'nope'/);
      } finally {
        (reader as StoreReader).close();
      }
    } finally {
      await releaseStore(store as Store);
    }
  });
});
