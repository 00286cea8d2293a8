// Stateless clients keep one session per conversation, over a real `tenax gateway run`: a request
// that carries a stored session's conversation continues it; another conversation gets a new
// session; two that extend one session at once wait for each other; a new conversation is titled
// in the background by auxiliary.title (a second simulator); without a title model, or when it
// fails or is too slow (the reply never waits), nothing is stored and the first message shows.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

type Message = { role: string; content: string };

const chat = (gw: GatewayProcess, messages: Message[]) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages }),
  });

async function answer(gw: GatewayProcess, messages: Message[]) {
  const response = await chat(gw, messages);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: { message: { content: string } }[] };
  return {
    sessionId: response.headers.get("x-session-id") ?? "",
    reply: body.choices[0]?.message.content ?? "",
  };
}

const user = (content: string): Message => ({ role: "user", content });
const assistant = (content: string): Message => ({ role: "assistant", content });

async function stored(gw: GatewayProcess, id: string) {
  return (await (await gw.fetch(`/api/sessions/${id}`)).json()) as {
    title: string | null;
    /** `stored` once the gateway wrote the title; `first_message` while a read derives it. */
    title_source: string;
    queued: number;
    messages: Message[];
  };
}

async function sessionIds(gw: GatewayProcess): Promise<string[]> {
  const listed = (await (await gw.fetch("/api/sessions")).json()) as { data: { id: string }[] };
  return listed.data.map((s) => s.id);
}

const titleOf = (gw: GatewayProcess, id: string) =>
  expect.poll(async () => (await stored(gw, id)).title, { timeout: 15_000, interval: 50 });
/** The session shows `title`, made from its first message at read time: no title was stored. */
async function plainTitleOf(gw: GatewayProcess, id: string, title: string) {
  const session = await stored(gw, id);
  expect({ title: session.title, source: session.title_source }).toEqual({ title, source: "first_message" });
}

/** A profile whose model is `sim` and whose auxiliary.title is a second simulator. */
async function titledProfile(timeout = 30) {
  const sim = await startSimulator();
  const titler = await startSimulator();
  closing.push(sim, titler);
  const paths = profileWith(
    `model: { provider: sim, name: echo }
providers:
  sim: { type: simulator, base_url: "${sim.url}" }
  titler: { type: simulator, base_url: "${titler.url}" }
auxiliary:
  title: { provider: titler, name: echo, timeout: ${timeout} }
retry: { max_attempts: 1 }
`,
  );
  return { sim, titler, home: paths.home };
}
const closing: Simulator[] = [];
afterEach(async () => {
  for (const sim of closing.splice(0)) await sim.close();
});

describe("stateless clients keep one session per conversation", () => {
  it("the second request of a conversation continues its session: one session with 4 messages", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const first = await answer(gw, [{ role: "system", content: "be brief" }, user("hello there")]);
    expect(first.reply).toBe("echo: hello there");
    const second = await answer(gw, [
      { role: "system", content: "be brief" },
      user("hello there"),
      assistant(first.reply),
      user("and more"),
    ]);
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.reply).toBe("echo: and more");
    const session = await stored(gw, first.sessionId);
    expect(session.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello there"],
      ["assistant", "echo: hello there"],
      ["user", "and more"],
      ["assistant", "echo: and more"],
    ]);
    expect(await sessionIds(gw)).toEqual([first.sessionId]);
    // The model got the history once, from the session, not twice.
    const sent = JSON.stringify(sim.requests()[1]?.body);
    expect(sent.split('"content":"hello there"').length - 1).toBe(1);
    expect(sent.split('"content":"echo: hello there"').length - 1).toBe(1);
    // A third request goes on in the same session.
    const third = await answer(gw, [
      user("hello there"),
      assistant(first.reply),
      user("and more"),
      assistant(second.reply),
      user("last"),
    ]);
    expect(third.sessionId).toBe(first.sessionId);
    expect((await stored(gw, first.sessionId)).messages).toHaveLength(6);
  });

  it("a different conversation, or one whose history differs, gets a new session", async () => {
    const { home } = await simProfile();
    const gw = await startGateway(home);
    const first = await answer(gw, [user("hello there")]);
    const other = await answer(gw, [user("something else")]);
    expect(other.sessionId).not.toBe(first.sessionId);
    // The same question with another answer is not that session's conversation.
    const edited = await answer(gw, [
      user("hello there"),
      assistant("an answer it never gave"),
      user("more"),
    ]);
    expect([first.sessionId, other.sessionId]).not.toContain(edited.sessionId);
    expect((await stored(gw, edited.sessionId)).messages).toHaveLength(4);
    expect((await stored(gw, first.sessionId)).messages).toHaveLength(2);
    expect(await sessionIds(gw)).toHaveLength(3);
  });

  it("two stateless requests extending one session at once wait for each other in that session", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const first = await answer(gw, [user("hello there")]);
    sim.script([{ type: "reply", text: "slow reply", chunk_size: 5, chunk_delay_ms: 1000 }]);
    const history = [user("hello there"), assistant(first.reply)];
    const both = Promise.all([answer(gw, [...history, user("a")]), answer(gw, [...history, user("b")])]);
    await expect
      .poll(async () => (await stored(gw, first.sessionId)).queued, { timeout: 15_000, interval: 20 })
      .toBe(1);
    const [a, b] = await both;
    expect([a.sessionId, b.sessionId]).toEqual([first.sessionId, first.sessionId]);
    const messages = (await stored(gw, first.sessionId)).messages.map((m) => m.content);
    expect(messages).toHaveLength(6);
    expect(messages.slice(0, 2)).toEqual(["hello there", "echo: hello there"]);
    // The second to run saw the first's reply.
    expect(JSON.stringify(sim.requests()[2]?.body)).toContain("slow reply");
  });

  it("a new conversation is titled by auxiliary.title in the background", async () => {
    const { home, titler } = await titledProfile();
    const gw = await startGateway(home);
    const first = await answer(gw, [user("plan a trip to the mountains")]);
    await titleOf(gw, first.sessionId).toBe("echo: plan a trip to the mountains");
    expect(titler.requests()).toHaveLength(1);
    expect(JSON.stringify(titler.requests()[0]?.body)).toContain("title");
    // Continuing the conversation makes no new title.
    await answer(gw, [user("plan a trip to the mountains"), assistant(first.reply), user("in May")]);
    expect(titler.requests()).toHaveLength(1);
    const listed = (await (await gw.fetch("/api/sessions")).json()) as {
      data: { id: string; title: string }[];
    };
    expect(listed.data.find((s) => s.id === first.sessionId)?.title).toBe(
      "echo: plan a trip to the mountains",
    );
  });

  it("the plain first message is the title when the title model fails, hangs, or is not configured", async () => {
    // 5 s: the check that the title request is still open after the reply came is made well within it,
    // even when a loaded machine stalls for a second.
    const { home, titler } = await titledProfile(5);
    const gw = await startGateway(home);
    titler.script([{ type: "error", status: 400, body: { error: { message: "no titles today" } } }]);
    const failed = await answer(gw, [user("why is the sky blue")]);
    await until(() => titler.requests()[0]?.ended !== undefined && titler.requests()[0]?.ended !== "open");
    // Nothing is written for a title the model could not make: the first message is shown.
    await plainTitleOf(gw, failed.sessionId, "why is the sky blue");
    expect(titler.requests()).toHaveLength(1);

    // A title model that never answers: the reply does not wait for it, and the session shows its
    // first message meanwhile and after auxiliary.title.timeout (5 s) has passed.
    titler.script([{ type: "hang", phase: "before_headers" }]);
    const long = `${"a very long question about many things ".repeat(4)}end`;
    const slow = await answer(gw, [user(long)]);
    expect(slow.reply).toBe(`echo: ${long}`);
    await until(() => titler.requests().length === 2);
    // Still waiting for the title model after the reply came: the reply did not wait for it.
    expect(titler.requests()[1]?.ended).toBe("open");
    await plainTitleOf(gw, slow.sessionId, "a very long question about many things a very long…");
    await until(() => titler.requests()[1]?.ended !== "open", 15_000);
    await plainTitleOf(gw, slow.sessionId, "a very long question about many things a very long…");

    const { home: plainHome } = await simProfile();
    const plain = await startGateway(plainHome);
    const untitled = await answer(plain, [user("  just\na   question  ")]);
    await plainTitleOf(plain, untitled.sessionId, "just a question");
  });
});
