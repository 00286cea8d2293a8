// Structured output on a fresh install: a real `tenax gateway run` on a new home with no config (the
// built-in simulator answers), and the real client libraries, unchanged: the AI SDK's
// generateObject with a zod schema (chat completions and the Responses API) and LangChain's
// withStructuredOutput (its default, json_schema; and function calling, on a model id, since the
// agent runs its own tools). Both on `model: "tenax"` (an agent turn) and on the model-mode id of
// the built-in simulator. And a cap and stop sequences reach the client as finish reasons.
import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI } from "@langchain/openai";
import { generateObject } from "ai";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { requireBuild } from "./helpers/cli.js";
import { startGateway } from "./helpers/gateway.js";
import type { ListeningProcess } from "./helpers/listening.js";
import { tempHome } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const MODELS = ["tenax", "simulator/echo"] as const;

const recipe = z.object({
  title: z.string(),
  servings: z.number().int().min(1).max(12),
  difficulty: z.enum(["easy", "medium", "hard"]),
  ingredients: z.array(z.object({ name: z.string(), grams: z.number().positive() })).min(2),
  vegetarian: z.boolean(),
  source: z.object({ author: z.string(), url: z.url() }).nullable(),
});

/** A gateway on a new home with no config.yaml: what `npm start` gives a newcomer. */
async function fresh(): Promise<{ gw: ListeningProcess; base: string; key: string }> {
  const gw = await startGateway(tempHome());
  return { gw, base: `${gw.url}/v1`, key: gw.key ?? "" };
}

describe("structured output on a fresh install", () => {
  for (const model of MODELS) {
    for (const api of ["chat", "responses"] as const) {
      it(`the AI SDK's generateObject gets an object of its zod schema (${model}, ${api} API)`, async () => {
        const { base, key } = await fresh();
        const provider = createOpenAI({ baseURL: base, apiKey: key });
        const result = await generateObject({
          model: api === "chat" ? provider.chat(model) : provider(model),
          schema: recipe,
          schemaName: "recipe",
          prompt: "A recipe for pancakes",
          maxRetries: 0,
        });
        expect(recipe.parse(result.object)).toEqual(result.object);
        expect(result.finishReason).toBe("stop");
      });
    }

    it(`LangChain's withStructuredOutput (its default method) gets an object of its zod schema (${model})`, async () => {
      const { base, key } = await fresh();
      const chat = new ChatOpenAI({ model, apiKey: key, configuration: { baseURL: base }, maxRetries: 0 });
      const answer = await chat
        .withStructuredOutput(recipe, { name: "recipe" })
        .invoke("A recipe for pancakes");
      expect(recipe.parse(answer)).toEqual(answer);
    });
  }

  it("LangChain's function-calling method gets its object from a forced tool call (model-mode id)", async () => {
    const { base, key } = await fresh();
    const chat = new ChatOpenAI({
      model: "simulator/echo",
      apiKey: key,
      configuration: { baseURL: base },
      maxRetries: 0,
    });
    const structured = chat.withStructuredOutput(recipe, { name: "recipe", method: "functionCalling" });
    const answer = await structured.invoke("A recipe for pancakes");
    expect(recipe.parse(answer)).toEqual(answer);
  });

  for (const model of MODELS) {
    it(`max_tokens and stop reach the client as finish reasons (${model})`, async () => {
      const { base, key } = await fresh();
      const openai = new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0 });
      const messages = [{ role: "user" as const, content: "tell me a long story about the sea" }];
      const capped = await openai.chat.completions.create({ model, messages, max_tokens: 3 });
      expect(capped.choices[0]?.finish_reason).toBe("length");
      expect(capped.choices[0]?.message.content).toBe("echo: tell m");
      const stopped = await openai.chat.completions.create({ model, messages, stop: ["story"] });
      expect(stopped.choices[0]?.finish_reason).toBe("stop");
      expect(stopped.choices[0]?.message.content).toBe("echo: tell me a long ");
    });
  }
});
