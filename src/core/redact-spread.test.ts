import { describe, expect, it } from "vitest";
import { seededRandom } from "./deps.js";
import { Redactor } from "./redact.js";
import { SPREAD_RUN, SpreadMatcher } from "./redact-spread.js";

const KEY = "zq8Hk2pLm4Rt7Vw9Xc3Bn6";
const TOKEN = "123456789:AAE-f0x_Tr4pDoor77kK";
const marker = (names: readonly string[]) => `[redacted:${names.join(", ")}]`;
const matcher = new SpreadMatcher(
  [
    { name: "MAIN_KEY", value: KEY },
    { name: "TELEGRAM_BOT_TOKEN", value: TOKEN },
  ],
  marker,
);

/** Letters and digits only, one case, markers left out: how the matcher reads a text. */
const squeeze = (text: string) =>
  text
    .replace(/\[redacted:[^\]]*\]/g, "|")
    .replace(/[^A-Za-z0-9|]/g, "")
    .toLowerCase();

/** Every run of SPREAD_RUN characters of `secret` (either way round) that `text` still shows. */
function runsLeft(text: string, secret: string): string[] {
  const seen = squeeze(text);
  const found: string[] = [];
  for (const form of [squeeze(secret), [...squeeze(secret)].reverse().join("")])
    for (let i = 0; i + SPREAD_RUN <= form.length; i++) {
      const piece = form.slice(i, i + SPREAD_RUN);
      if (seen.includes(piece)) found.push(piece);
    }
  return found;
}

describe("SpreadMatcher", () => {
  it("replaces a secret printed one character a line (grep -o .), keeping the text around it", () => {
    const text = `M\nA\nI\nN\n_\nK\nE\nY\n=\n${[...KEY].join("\n")}\n`;
    expect(matcher.redact(text)).toBe("M\nA\nI\nN\n_\nK\nE\nY\n=\n[redacted:MAIN_KEY]\n");
  });

  it("replaces a piece of a secret (cut -c), spaced out (od -c), in another case (tr) or backwards (rev)", () => {
    expect(matcher.redact(`Y=${KEY.slice(2, 14)}\n`)).toBe("Y=[redacted:MAIN_KEY]\n");
    expect(matcher.redact(`0000000   ${[...KEY.slice(0, 10)].join("   ")}\n`)).toBe(
      "0000000   [redacted:MAIN_KEY]\n",
    );
    expect(matcher.redact(`TOKEN=${TOKEN.toUpperCase()}`)).toBe("TOKEN=[redacted:TELEGRAM_BOT_TOKEN]");
    expect(matcher.redact(`${[...TOKEN].reverse().join("")}=NEKOT`)).toBe(
      "[redacted:TELEGRAM_BOT_TOKEN]=NEKOT",
    );
    // Its punctuation does not hide it: the token's digits run on through ':' and '-'.
    expect(matcher.redact("id 89:AAEf0x!")).toBe("id [redacted:TELEGRAM_BOT_TOKEN]!");
  });

  it(`leaves fewer than ${SPREAD_RUN} characters of a secret, and ordinary text, as they are`, () => {
    const seven = `a ${KEY.slice(0, SPREAD_RUN - 1)} b`;
    expect(matcher.redact(seven)).toBe(seven);
    const plain = "npm test\n  42 passed, 0 failed (3.1 s)\n";
    expect(matcher.redact(plain)).toBe(plain);
    expect(matcher.redact(`a ${KEY.slice(0, SPREAD_RUN)} b`)).toBe("a [redacted:MAIN_KEY] b");
  });

  it("joins overlapping runs of two secrets into one marker naming both", () => {
    const both = new SpreadMatcher(
      [
        { name: "A", value: "abcdefghijkl" },
        { name: "B", value: "ijklmnopqrst" },
      ],
      marker,
    );
    expect(both.redact("<abcdefghijklmnopqrst>")).toBe("<[redacted:A, B]>");
    expect(both.redact("<abcdefgh> <mnopqrst>")).toBe("<[redacted:A]> <[redacted:B]>");
  });

  it("reads no run through a marker: what a marker stands for is not the text's", () => {
    // Seven characters of the key, then a marker whose "r" would make the key's eighth.
    const at = KEY.indexOf("R") - (SPREAD_RUN - 1);
    const text = `${KEY.slice(at, at + SPREAD_RUN - 1)} [redacted:MAIN_KEY]`;
    expect(matcher.redact(text)).toBe(text);
  });

  it("in a stream, redacts a run that continues into the next piece from where it continues", () => {
    const text = `key: ${[...KEY].join(" ")} end`;
    const whole = matcher.redact(text);
    expect(whole).toBe("key: [redacted:MAIN_KEY] end");
    const stream = matcher.stream();
    let out = "";
    for (const char of text) out += stream.push(char);
    // One character a piece: the first SPREAD_RUN - 1 went out before they were a run, no more.
    expect(runsLeft(out, KEY)).toEqual([]);
    expect(out.startsWith(`key: ${[...KEY.slice(0, SPREAD_RUN - 1)].join(" ")} [redacted:MAIN_KEY]`)).toBe(
      true,
    );
    expect(out.endsWith(" end")).toBe(true);
  });

  it("never lets a whole run through, however a stream is cut (seeded)", () => {
    const random = seededRandom(24);
    for (let round = 0; round < 200; round++) {
      const secret = round % 2 === 0 ? KEY : TOKEN;
      const gap = ["\n", " ", "", ", ", "\t|"][round % 5] as string;
      const from = Math.floor(random() * 6);
      const piece = [...secret.slice(from, from + SPREAD_RUN + Math.floor(random() * 10))].join(gap);
      const text = `line ${round}\n${piece}\ntrailer ${round}\n`;
      expect(runsLeft(matcher.redact(text), secret)).toEqual([]);
      const stream = matcher.stream();
      let out = "";
      let at = 0;
      while (at < text.length) {
        const next = Math.min(text.length, at + 1 + Math.floor(random() * 12));
        out += stream.push(text.slice(at, next));
        at = next;
      }
      expect(runsLeft(out, secret), JSON.stringify({ text, out })).toEqual([]);
    }
  });
});

describe("Redactor.redactOutput", () => {
  const r = new Redactor([
    { name: "providers.main.api_keys[0]", value: KEY },
    { name: "TELEGRAM_BOT_TOKEN", value: TOKEN },
  ]);

  it("replaces whole secrets by their marker, then the spread-out ones", () => {
    expect(r.redactOutput(`MAIN_KEY=${KEY}\n${[...TOKEN].join("\n")}\n`)).toBe(
      "MAIN_KEY=[redacted:providers.main.api_keys[0]]\n[redacted:TELEGRAM_BOT_TOKEN]\n",
    );
    expect(r.redact([...KEY].join("\n"))).toBe([...KEY].join("\n"));
  });

  it("reads each string of a tool's result before JSON escapes split its runs", () => {
    const result = { exit_code: 0, stdout: [...KEY].join("\n"), stderr: "" };
    // As JSON text, each newline is the two characters \n: the n's break every run.
    expect(runsLeft(JSON.stringify(result).replaceAll("\\n", " "), KEY)).not.toEqual([]);
    expect(r.redactOutputDeep(result)).toEqual({
      exit_code: 0,
      stdout: "[redacted:providers.main.api_keys[0]]",
      stderr: "",
    });
  });

  it("a command's output piped in pieces: whole and spread-out secrets alike", () => {
    const stream = r.outputStream();
    const text = `A=${KEY}\n${[...TOKEN].join("\n")}\nok\n`;
    let out = "";
    for (let at = 0; at < text.length; at += 3) out += stream.push(text.slice(at, at + 3));
    out += stream.end();
    expect(out).toContain("A=[redacted:providers.main.api_keys[0]]");
    expect(runsLeft(out, KEY)).toEqual([]);
    expect(runsLeft(out, TOKEN)).toEqual([]);
    expect(out.endsWith("\nok\n")).toBe(true);
  });
});
