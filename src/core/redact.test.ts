import { describe, expect, it } from "vitest";
import { seededRandom } from "./deps.js";
import { MIN_SECRET_LENGTH, Redactor, redactKeyShapes } from "./redact.js";

const KEY = "zq8Hk2pLm4Rt7Vw9";

/** Text given to a stream redactor in the pieces `cuts` says; what it sent, joined. */
function streamed(redactor: Redactor, text: string, cuts: number[]): string {
  const stream = redactor.stream();
  let out = "";
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out += stream.push(text.slice(from, cut));
    from = cut;
  }
  return out + stream.end();
}

describe("Redactor", () => {
  it("redactDeep gives back the very same object where nothing needed redacting, and a copy where something did", () => {
    const r = new Redactor([{ name: "K", value: KEY }]);
    const clean = { a: "plain", b: [1, "two", { c: "three" }] };
    expect(r.redactDeep(clean)).toBe(clean);
    const dirty = { a: "plain", b: [1, `has ${KEY}`, { c: "three" }] };
    const out = r.redactDeep(dirty);
    expect(out).not.toBe(dirty);
    expect(out).toEqual({ a: "plain", b: [1, "has [redacted:K]", { c: "three" }] });
    expect(out.b[2]).toBe(dirty.b[2]);
    expect(dirty.b[1]).toBe(`has ${KEY}`);
  });

  it("replaces each secret by a marker that names it, wherever it is", () => {
    const r = new Redactor([
      { name: "providers.main.api_keys[0]", value: KEY },
      { name: "TENAX_API_KEY", value: "gw-0123456789abcdef" },
    ]);
    expect(r.redact(`401: Incorrect API key provided: ${KEY}. (${KEY})`)).toBe(
      "401: Incorrect API key provided: [redacted:providers.main.api_keys[0]]. ([redacted:providers.main.api_keys[0]])",
    );
    expect(r.redact("TENAX_API_KEY=gw-0123456789abcdef\n")).toBe("TENAX_API_KEY=[redacted:TENAX_API_KEY]\n");
    expect(r.redact("nothing secret here")).toBe("nothing secret here");
    expect(r.size).toBe(2);
  });

  it(`ignores values shorter than ${MIN_SECRET_LENGTH} characters, which would mangle ordinary text`, () => {
    const r = new Redactor([
      { name: "PORT", value: "8642" },
      { name: "FLAG", value: "true" },
      { name: "SHORT", value: "abcdefg" },
      { name: "EIGHT", value: "abcdefgh" },
    ]);
    expect(r.size).toBe(1);
    expect(r.redact("port 8642 is true, abcdefg and abcdefgh")).toBe(
      "port 8642 is true, abcdefg and [redacted:EIGHT]",
    );
    expect(r.isSecret("8642")).toBe(false);
    expect(r.isSecret("abcdefgh")).toBe(true);
  });

  it("takes regular-expression characters in a secret literally", () => {
    const value = "a.b*c+d?e(f)[g]{h}|i^j$k\\l/m-n";
    const r = new Redactor([{ name: "ODD", value }]);
    expect(r.redact(`x ${value} y`)).toBe("x [redacted:ODD] y");
    // Not as a pattern: "a.b" must not match "aXb".
    expect(r.redact("aXb*c+d?e(f)[g]{h}|i^j$k\\l/m-n")).toBe("aXb*c+d?e(f)[g]{h}|i^j$k\\l/m-n");
  });

  it("replaces the longer of two secrets that start alike, and overlapping secrets as one span", () => {
    const r = new Redactor([
      { name: "SHORT", value: "abcdefgh" },
      { name: "LONG", value: "abcdefgh-ijkl" },
      { name: "LATER", value: "ghij-klmnopq" },
    ]);
    expect(r.redact("abcdefgh-ijkl")).toBe("[redacted:LONG]");
    expect(r.redact("abcdefgh-x")).toBe("[redacted:SHORT]-x");
    // SHORT ends inside LATER: neither leaves a piece behind.
    expect(r.redact("<abcdefghij-klmnopq>")).toBe("<[redacted:SHORT, LATER]>");
  });

  it("finds a secret inside JSON text, where its quotes and backslashes are escaped", () => {
    const value = 'pa"ss\\word-123';
    const r = new Redactor([{ name: "ODD", value }]);
    const once = JSON.stringify({ stdout: `KEY=${value}` });
    expect(r.redact(once)).toBe('{"stdout":"KEY=[redacted:ODD]"}');
    expect(JSON.parse(r.redact(once))).toEqual({ stdout: "KEY=[redacted:ODD]" });
    const twice = JSON.stringify({ value: once });
    expect(r.redact(twice)).not.toContain("word-123");
    expect(JSON.parse(JSON.parse(r.redact(twice)).value)).toEqual({ stdout: "KEY=[redacted:ODD]" });
  });

  it("redacts every string of a JSON-like value and leaves everything else", () => {
    const r = new Redactor([{ name: "K", value: KEY }]);
    const input = { a: KEY, n: 3, list: [`x${KEY}`, null, true], nested: { b: KEY }, [KEY]: 1 };
    expect(r.redactDeep(input)).toEqual({
      a: "[redacted:K]",
      n: 3,
      list: ["x[redacted:K]", null, true],
      nested: { b: "[redacted:K]" },
      [KEY]: 1,
    });
    expect(input.a).toBe(KEY);
  });

  it("a message cut short ('…') in the middle of a secret loses that part of it too", () => {
    const r = new Redactor([{ name: "K", value: KEY }]);
    expect(r.redactMessage(`error: bad key ${KEY.slice(0, 9)}…`)).toBe("error: bad key [redacted:K]…");
    // Three characters say nothing about the key, and are left.
    expect(r.redactMessage(`error: bad key ${KEY.slice(0, 3)}…`)).toBe(`error: bad key ${KEY.slice(0, 3)}…`);
    // And the key-shaped net is still there for keys nobody configured.
    expect(r.redactMessage("Incorrect API key provided: sk-proj-abcdef123456")).toBe(
      "Incorrect API key provided: sk-[redacted]",
    );
  });

  it("with no secrets, gives every text back as it is", () => {
    const text = `a ${KEY} b`;
    expect(Redactor.none.redact(text)).toBe(text);
    expect(streamed(Redactor.none, text, [3, 5])).toBe(text);
  });
});

describe("StreamRedactor", () => {
  const r = new Redactor([
    { name: "A", value: KEY },
    { name: "B", value: "KEY-0123456789" },
    { name: "C", value: "0123456789-xyz" },
  ]);

  it("replaces a secret split over two deltas, and over one delta per character", () => {
    const text = `the key is ${KEY}, ok`;
    const at = text.indexOf(KEY) + 5;
    expect(streamed(r, text, [at])).toBe("the key is [redacted:A], ok");
    const everyChar = Array.from({ length: text.length - 1 }, (_, i) => i + 1);
    expect(streamed(r, text, everyChar)).toBe("the key is [redacted:A], ok");
  });

  it("sends ordinary text at once and holds back only what could begin a secret", () => {
    const stream = r.stream();
    expect(stream.push("hello world ")).toBe("hello world ");
    expect(stream.push(`and ${KEY.slice(0, 6)}`)).toBe("and ");
    expect(stream.push(KEY.slice(6))).toBe("[redacted:A]");
    expect(stream.push(" then zq8")).toBe(" then ");
    // Not the key after all: what was held goes out.
    expect(stream.push("!")).toBe("zq8!");
    expect(stream.end()).toBe("");
  });

  it("ends with what it held, and never cuts a surrogate pair", () => {
    const stream = r.stream();
    expect(stream.push("x KEY-0123")).toBe("x ");
    expect(stream.end()).toBe("KEY-0123");
    const emoji = new Redactor([{ name: "E", value: "😀secret-value" }]);
    const s = emoji.stream();
    const out = s.push("a 😀") + s.push("b");
    expect(out + s.end()).toBe("a 😀b");
  });

  it("matches what redacting the whole text gives, however the text is cut (seeded)", () => {
    const seed = Number(process.env.REDACT_SEED ?? Date.now() % 1_000_000);
    console.log(`StreamRedactor random cuts: seed ${seed} (REDACT_SEED=${seed} replays it)`);
    const next = seededRandom(seed);
    const pieces = [
      KEY,
      "KEY-0123456789",
      "0123456789-xyz",
      "KEY-0123456789-xyz",
      "zq8",
      "KEY-",
      " ",
      "text ",
    ];
    for (let round = 0; round < 300; round++) {
      let text = "";
      while (text.length < 120) text += pieces[Math.floor(next() * pieces.length)];
      const cuts = [
        ...new Set(
          Array.from({ length: 1 + Math.floor(next() * 12) }, () => Math.floor(next() * text.length)),
        ),
      ]
        .filter((c) => c > 0)
        .sort((a, b) => a - b);
      const whole = r.redact(text);
      const out = streamed(r, text, cuts);
      expect(out, `text ${JSON.stringify(text)} cut at ${cuts.join(",")}`).toBe(whole);
      expect(out).not.toContain(KEY);
      expect(out).not.toContain("0123456789");
    }
  });
});

describe("redactKeyShapes", () => {
  it("replaces what looks like a key even when no one configured it", () => {
    expect(redactKeyShapes("Authorization: Bearer abc.def-123")).toBe("Authorization: Bearer [redacted]");
    // The word that stands for a key in a how-to line is no key.
    expect(redactKeyShapes("clients send it as Authorization: Bearer KEY")).toBe(
      "clients send it as Authorization: Bearer KEY",
    );
    expect(redactKeyShapes('{"api_key": "hunter22"}')).toBe('{"api_key": "[redacted]"}');
  });
});
