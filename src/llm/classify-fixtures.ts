// Realistic failures for the classifier's tests, one file per provider; bodies written in our own
// words from each provider's public docs.

import { anthropicRows } from "./classify-fixtures/anthropic.js";
import { llamacppRows } from "./classify-fixtures/llamacpp.js";
import { ollamaRows } from "./classify-fixtures/ollama.js";
import { openaiRows } from "./classify-fixtures/openai.js";
import { openrouterRows } from "./classify-fixtures/openrouter.js";
import { retryAfterRows } from "./classify-fixtures/retry-after.js";
import type { FixtureRow } from "./classify-fixtures/shared.js";
import { transportRows } from "./classify-fixtures/transport.js";
import { vllmRows } from "./classify-fixtures/vllm.js";

export { type FixtureRow, NOW } from "./classify-fixtures/shared.js";

export const ROWS: readonly FixtureRow[] = [
  ...openaiRows,
  ...anthropicRows,
  ...openrouterRows,
  ...ollamaRows,
  ...vllmRows,
  ...llamacppRows,
  ...transportRows,
  ...retryAfterRows,
];
