// Synthetic agent transcripts for the benchmarks: word frequencies follow a Zipf law (everyday
// English and programming words at the top, generated words in the long tail), sessions alternate
// user, assistant, tool-call and tool-result messages, and everything comes from a seeded generator.
import { type Random, seededRandom } from "../src/core/deps.js";
import type { NewMessage } from "../src/store/store-types.js";

/** A message before it is given a session. */
export type MessageDraft = Omit<NewMessage, "session_id" | "uid" | "turn_id">;

// The head of the vocabulary, most frequent first; ranks below this come from generated words.
const HEAD = (
  "the to and of a in is it that for you this with on be as not are we can file if or from at by an " +
  "will have was function error but so use test run all one code do value new data when then should " +
  "return which has line there would my type our set need just make also like what now check here " +
  "only change add fix build call config path name output result first other into more some update"
).split(" ");

const ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr st tr pl gr sh ch th".split(" ");
const VOWELS = "a e i o u ai ea ou io".split(" ");
const CODAS = ["", "n", "r", "s", "l", "t", "m", "x", "nd", "st"];
const TOOLS = ["terminal", "read_file", "write_file", "search_files", "web_fetch", "patch"];

export const VOCABULARY_SIZE = 100_000;
/** Ranks from here on are the rare tail (each such word is in roughly 10 to 100 of 1M messages). */
export const RARE_FROM = 50_000;
export const MEDIUM_RANKS: readonly [number, number] = [300, 3000];
export const COMMON_RANKS: readonly [number, number] = [0, 30];

export class Corpus {
  readonly rng: Random;
  readonly words: readonly string[];
  private readonly rankOf = new Map<string, number>();
  private readonly cdf: Float64Array;
  private callCounter = 0;

  constructor(seed: number) {
    this.rng = seededRandom(seed);
    this.words = buildWords(VOCABULARY_SIZE, seededRandom(0x7e4a));
    this.words.forEach((w, i) => {
      this.rankOf.set(w, i);
    });
    // Zipf with exponent 1: the word of rank r has weight 1 / (r + 1).
    this.cdf = new Float64Array(this.words.length);
    let total = 0;
    for (let r = 0; r < this.words.length; r++) {
      total += 1 / (r + 1);
      this.cdf[r] = total;
    }
    for (let r = 0; r < this.cdf.length; r++) this.cdf[r] = (this.cdf[r] ?? 0) / total;
  }

  rank(word: string): number | undefined {
    return this.rankOf.get(word.toLowerCase());
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.rng() * (max - min + 1));
  }

  /** A length between min and max, log-uniform: short messages are more frequent than long ones. */
  length(min: number, max: number): number {
    return Math.round(min * (max / min) ** this.rng());
  }

  word(): string {
    const u = this.rng();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.cdf[mid] ?? 1) < u) lo = mid + 1;
      else hi = mid;
    }
    return this.words[lo] ?? "the";
  }

  /** A word of a rank within [from, to). */
  wordInRanks(from: number, to: number): string {
    return this.words[this.int(from, to - 1)] ?? "the";
  }

  /** Prose of about `chars` characters: sentences of Zipf words, now and then a file path. */
  text(chars: number, paths = false): string {
    const out: string[] = [];
    let size = 0;
    let sentence = 0;
    while (size < chars) {
      let w = this.word();
      if (sentence === 0) w = w.charAt(0).toUpperCase() + w.slice(1);
      if (paths && this.rng() < 0.03) w = this.filePath();
      sentence++;
      if (sentence > 6 && this.rng() < 0.12) {
        w += ".";
        sentence = 0;
      } else if (this.rng() < 0.05) {
        w += ",";
      }
      out.push(w);
      size += w.length + 1;
    }
    return out.join(" ");
  }

  /** A path with a 6-hex-digit part: a token that is almost unique across the corpus. */
  filePath(): string {
    const hex = Math.floor(this.rng() * 0xffffff)
      .toString(16)
      .padStart(6, "0");
    return `src/${this.word()}/${this.word()}-${hex}.ts`;
  }

  /** The messages of one session: a user asks, the assistant answers or calls tools, tools reply. */
  session(count: number): MessageDraft[] {
    const out: MessageDraft[] = [];
    let pending: string[] = [];
    let next: "user" | "assistant" | "tool" = "user";
    while (out.length < count) {
      if (next === "user") {
        out.push({ role: "user", content: this.text(this.length(50, 400)) });
        next = "assistant";
      } else if (next === "tool") {
        const id = pending.shift() ?? "call_0";
        out.push({ role: "tool", content: this.text(this.length(50, 2000), true), tool_call_id: id });
        if (pending.length === 0) next = "assistant";
      } else if (this.rng() < 0.35) {
        pending = Array.from({ length: this.int(1, 2) }, () => `call_${(this.callCounter++).toString(36)}`);
        out.push({
          role: "assistant",
          content: this.rng() < 0.5 ? null : this.text(this.length(50, 200)),
          tool_calls: pending.map((id) => this.toolCall(id)),
        });
        next = "tool";
      } else {
        out.push({ role: "assistant", content: this.text(this.length(100, 2000)) });
        next = "user";
      }
    }
    return out;
  }

  private toolCall(id: string): unknown {
    const name = TOOLS[this.int(0, TOOLS.length - 1)] ?? "terminal";
    const args =
      name === "terminal"
        ? { command: `grep -rn ${this.word()} ${this.filePath()}` }
        : { path: this.filePath(), query: this.text(this.length(10, 80)) };
    return { id, type: "function", function: { name, arguments: JSON.stringify(args) } };
  }
}

function buildWords(size: number, rng: Random): string[] {
  const pick = (list: readonly string[]) => list[Math.floor(rng() * list.length)] ?? "";
  const seen = new Set<string>(HEAD);
  const words = [...HEAD];
  while (words.length < size) {
    const syllables = 2 + Math.floor(rng() * 2);
    let w = "";
    for (let i = 0; i < syllables; i++) w += pick(ONSETS) + pick(VOWELS) + pick(CODAS);
    if (seen.has(w)) continue;
    seen.add(w);
    words.push(w);
  }
  return words;
}
