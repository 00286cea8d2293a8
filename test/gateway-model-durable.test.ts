// The model-gateway mode and the store's syncs, over the real app and a real store whose WAL syncs
// the test holds back: the provider is asked once the question is committed, while a stream's
// question is synced (so an answer waits for about one sync, not two in a row), and a plain call's
// question is made durable by its answer's one sync; the client hears nothing before the question
// is durable, and gets its answer only once the answer is durable too; a question that can never be
// made durable is never answered as a success.
import { closeSync, fdatasync, fdatasyncSync, openSync } from "node:fs";
import { APIError } from "openai";
import { describe, expect, it } from "vitest";
import type { WalFiles } from "../src/store/wal-sync.js";
import { type ModelGateway, startModelGateway } from "./helpers/model-gateway.js";

/** The real file calls, but a sync waits while held, or fails with EIO once `failing`. */
function heldSyncs() {
  const pending: Array<() => void> = [];
  const state = { held: false, failing: false };
  let asked = 0;
  const files: WalFiles = {
    openSync,
    closeSync,
    fdatasyncSync,
    fdatasync: (fd, done) => {
      asked++;
      const run = () => {
        if (state.failing) done(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
        else fdatasync(fd, done);
      };
      if (state.held) pending.push(run);
      else run();
    },
  };
  return {
    files,
    state,
    /** Syncs asked for and not yet run. */
    waiting: () => pending.length,
    /** Syncs asked for so far. */
    asked: () => asked,
    release: () => {
      state.held = false;
      for (const run of pending.splice(0)) run();
    },
  };
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The one session the store holds. */
async function sessionOf(gw: ModelGateway): Promise<string> {
  return (await gw.store.listSessions())[0]?.id ?? "";
}

/** Whether a promise has settled, without waiting for it. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((r) => setTimeout(r, 50));
  return done;
}

describe("the model-gateway mode and durable commits", () => {
  for (const stream of [false, true]) {
    it(`asks the provider while the question's sync runs, and answers once all is durable (stream: ${stream})`, async () => {
      const syncs = heldSyncs();
      const gw = await startModelGateway({ walFiles: syncs.files });
      try {
        syncs.state.held = true;
        // A slow reply (5 chunks, 250 ms apart), so that the question's sync is over before it ends.
        gw.main.script([{ type: "reply", text: "echo: hello there", chunk_size: 4, chunk_delay_ms: 250 }]);
        const messages = [{ role: "user" as const, content: "hello there" }];
        const answer = stream
          ? gw.client.chat.completions
              .create({ model: "main/echo", messages, stream: true })
              .withResponse()
              .then(async ({ data, response }) => {
                let text = "";
                for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
                return { text, sessionId: response.headers.get("x-session-id") ?? "" };
              })
          : gw.client.chat.completions
              .create({ model: "main/echo", messages })
              .withResponse()
              .then(({ data, response }) => ({
                text: data.choices[0]?.message.content ?? "",
                sessionId: response.headers.get("x-session-id") ?? "",
              }));
        // The question is committed: the provider is asked. A stream's question is synced
        // meanwhile (its sync is held here); a plain answer's waits for the answer's one sync.
        await until("the provider to be asked", () => gw.bodies(gw.main).length === 1);
        expect(syncs.waiting()).toBe(stream ? 1 : 0);
        // But the client has nothing yet: not the stream's headers, not the answer.
        expect(await settled(answer)).toBe(false);
        // The question made durable while the provider still answers; then syncs are held again.
        syncs.release();
        await new Promise((r) => setTimeout(r, 300));
        syncs.state.held = true;
        const syncsBeforeAnswer = syncs.asked();
        // The answer is committed (visible to reads), its sync held: the client does not have it.
        await until(
          "the answer's commit",
          async () => (await gw.store.getMessages(await sessionOf(gw))).length === 2,
        );
        expect(await settled(answer)).toBe(false);
        syncs.release();
        const { text, sessionId } = await answer;
        // A plain call's question asked for no sync of its own: the answer's made it durable too.
        // (A stream's may take two: the search index's commit during a held sync asks for one more.)
        if (stream) expect(syncsBeforeAnswer).toBeGreaterThanOrEqual(1);
        else expect(syncsBeforeAnswer).toBe(0);
        expect(text).toBe("echo: hello there");
        expect((await gw.store.getMessages(sessionId)).map((m) => [m.role, m.content])).toEqual([
          ["user", "hello there"],
          ["assistant", "echo: hello there"],
        ]);
      } finally {
        syncs.release(); // a failed check must not leave the store's close waiting
      }
    });
  }

  it("answers a plain call's failure only once its question is durable, naming its session", async () => {
    const syncs = heldSyncs();
    const gw = await startModelGateway({ walFiles: syncs.files, breaker: false });
    try {
      syncs.state.held = true;
      gw.main.script([{ type: "error", status: 400, body: { error: { message: "bad request" } } }]);
      const failed = gw.client.chat.completions
        .create({ model: "main/echo", messages: [{ role: "user", content: "hi" }] })
        .catch((e: unknown) => e);
      await until("the provider to be asked", () => gw.main.requests().length === 1);
      await until("the provider's answer", () => gw.main.requests()[0]?.ended === "completed");
      // The provider said no, and the client is told nothing while the question's sync is held.
      await until("a sync to be asked for", () => syncs.waiting() > 0);
      expect(await settled(failed)).toBe(false);
      syncs.release();
      const error = (await failed) as APIError;
      expect(error).toBeInstanceOf(APIError);
      expect(error.status).toBe(400);
      const sessionId = error.headers?.get("x-session-id") ?? "";
      expect((await gw.store.getMessages(sessionId)).map((m) => m.content)).toEqual(["hi"]);
    } finally {
      syncs.release();
    }
  });

  it("never answers a call as a success when its question cannot be made durable", async () => {
    const syncs = heldSyncs();
    const gw = await startModelGateway({ walFiles: syncs.files });
    syncs.state.failing = true;
    for (const stream of [false, true]) {
      const failed = await gw.client.chat.completions
        .create({ model: "main/echo", messages: [{ role: "user", content: "hi" }], stream })
        .then(async (r) => {
          if (Symbol.asyncIterator in r) for await (const _ of r);
          return r;
        })
        .catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(APIError);
      expect((failed as APIError).status).toBeGreaterThanOrEqual(500);
    }
    expect(gw.store.health().disk_failure).not.toBeNull();
  });
});
