// A rate limit whose error names the model cools the key for that model only: the classifier
// tells it from real providers' bodies (OpenAI, Groq, OpenRouter name the model; Anthropic and
// Mistral do not), the pool keeps the cooldown per model, and over real HTTP a 429 for one model
// leaves the key usable for the provider's other models, while one that names none still cools it.
import { describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { err, hello, open, sim } from "../../test/helpers/router.js";
import { configSchema } from "../config/schema.js";
import { classify } from "./classify.js";
import { CredentialPool } from "./credential-pool.js";
import { createModelRuntime } from "./runtime.js";

const NAMES_MODEL = {
  openai: {
    model: "gpt-4o",
    body: {
      error: {
        message:
          "Rate limit reached for gpt-4o in organization org-8Xk2 on tokens per min (TPM): Limit 30000, Used 29876, Requested 1200. Please try again in 2.152s. Visit https://platform.openai.com/account/rate-limits to learn more.",
        type: "tokens",
        param: null,
        code: "rate_limit_exceeded",
      },
    },
  },
  groq: {
    model: "llama-3.3-70b-versatile",
    body: {
      error: {
        message:
          "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01jb` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 5844, Requested 1074. Please try again in 9.18s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
        type: "tokens",
        code: "rate_limit_exceeded",
      },
    },
  },
  openrouter: {
    model: "meta-llama/llama-3.3-70b-instruct:free",
    body: {
      error: {
        message: "Provider returned error",
        code: 429,
        metadata: {
          raw: "meta-llama/llama-3.3-70b-instruct:free is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations",
          provider_name: "Chutes",
        },
      },
    },
  },
};

const NAMES_NONE = {
  anthropic: {
    model: "claude-sonnet-4-5",
    body: {
      type: "error",
      error: {
        type: "rate_limit_error",
        message:
          "This request would exceed the rate limit for your organization (3f1c) of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
      },
    },
  },
  mistral: {
    model: "mistral-large-latest",
    body: {
      object: "error",
      message: "Requests rate limit exceeded",
      type: "rate_limited",
      param: null,
      code: "1300",
    },
  },
};

describe("a rate limit that names the model", () => {
  it.each(Object.entries(NAMES_MODEL))("%s's 429 names the model asked for", (_name, { model, body }) => {
    const c = classify({ status: 429, headers: {}, body, model });
    expect(c).toMatchObject({ reason: "rate_limit", model_named: true });
  });

  it.each(Object.entries(NAMES_NONE))("%s's 429 names none: the key cools", (_name, { model, body }) => {
    const c = classify({ status: 429, headers: {}, body, model });
    expect(c.reason).toBe("rate_limit");
    expect(c.model_named).toBeUndefined();
  });

  it("names a model only as a whole name: gpt-4o is not named by gpt-4o-mini's limit", () => {
    const body = {
      error: {
        message:
          "Rate limit reached for gpt-4o-mini in organization org-1 on requests per min (RPM): Limit 3.",
      },
    };
    expect(classify({ status: 429, headers: {}, body, model: "gpt-4o" }).model_named).toBeUndefined();
    expect(classify({ status: 429, headers: {}, body, model: "gpt-4o-mini" }).model_named).toBe(true);
  });

  it("the pool cools the key for that model only; an error naming none cools it for all", async () => {
    const pool = new CredentialPool("main", ["sk-one-aaaaaaaa"]);
    const [key] = await pool.state(0);
    const fp = key?.fingerprint ?? "";
    const named = classify({
      status: 429,
      headers: { "retry-after": "20" },
      body: NAMES_MODEL.openai.body,
      model: "gpt-4o",
    });
    expect(await pool.report(fp, named, 1_000, "gpt-4o")).toBe("cooled");
    expect(await pool.pick(1_000, "gpt-4o")).toBeNull();
    expect((await pool.pick(1_000, "gpt-4o-mini"))?.fingerprint).toBe(fp);
    expect((await pool.state(1_000, "gpt-4o"))[0]).toMatchObject({ status: "cooling", reason: "rate_limit" });
    expect((await pool.state(1_000, "gpt-4o-mini"))[0]?.status).toBe("ok");
    const unnamed = classify({
      status: 429,
      headers: { "retry-after": "20" },
      body: NAMES_NONE.anthropic.body,
    });
    await pool.report(fp, unnamed, 1_000, "gpt-4o-mini");
    expect(await pool.pick(1_000, "gpt-4o-mini")).toBeNull();
  });
});

describe("over real HTTP", () => {
  it("a 429 naming one model leaves the key for the provider's other models", async () => {
    const s = await sim({ big: { context_window: 100_000 }, small: { context_window: 100_000 } });
    const body = {
      error: {
        message:
          "Rate limit reached for big in organization org-1 on tokens per min (TPM): Limit 10, Used 10.",
        type: "tokens",
        code: "rate_limit_exceeded",
      },
    };
    s.script([err(429, { "retry-after": "20" }, body)]);
    const config = configSchema.parse({
      model: { provider: "sim", name: "big" },
      providers: { sim: { type: "openai", base_url: s.url, api_keys: ["sk-only-key"] } },
      retry: { max_attempts: 1 },
    });
    const rt = await createModelRuntime(config, { deps: fakeDeps() });
    open.push(rt);
    await expect(
      rt.router.call({ provider: "sim", model: "big" }, hello, { contextTokens: 0 }),
    ).rejects.toMatchObject({
      classified: { reason: "rate_limit" },
    });
    const other = await rt.router.call({ provider: "sim", model: "small" }, hello, { contextTokens: 0 });
    expect(other.model).toBe("small");
    // The cooled model itself is still skipped: the call fails without a request.
    const before = s.requests().length;
    await expect(
      rt.router.call({ provider: "sim", model: "big" }, hello, { contextTokens: 0 }),
    ).rejects.toMatchObject({
      classified: { reason: "rate_limit" },
    });
    expect(s.requests()).toHaveLength(before);
  });
});
