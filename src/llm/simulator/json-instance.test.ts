// The simulator's JSON Schema instances, checked by a real validator: zod's own schemas (turned to
// JSON Schema as the AI SDK and LangChain send them, and the instance parsed back by the zod schema
// itself), and hand-written schemas of the shapes clients send, validated with zod's fromJSONSchema.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { instanceOf } from "./json-instance.js";

const zodCases: Record<string, z.ZodType> = {
  "a flat object": z.object({ name: z.string(), age: z.number().int() }),
  "enums, literals, booleans and nullables": z.object({
    colour: z.enum(["red", "green"]),
    kind: z.literal("fruit"),
    ripe: z.boolean(),
    note: z.string().nullable(),
  }),
  "bounded numbers and strings": z.object({
    score: z.number().min(0.5).max(0.9),
    count: z.number().int().gt(3).lt(10),
    step: z.number().multipleOf(5).min(12),
    code: z.string().min(8).max(10),
    tag: z.string().max(2),
  }),
  formats: z.object({
    email: z.email(),
    url: z.url(),
    id: z.uuid(),
    when: z.iso.datetime(),
    day: z.iso.date(),
  }),
  "arrays within bounds, and tuples": z.object({
    tags: z.array(z.string()).min(3).max(5),
    pair: z.tuple([z.string(), z.number()]),
    ids: z.array(z.number().int()).min(2),
  }),
  "nested objects and arrays of objects": z.object({
    author: z.object({ name: z.string(), address: z.object({ city: z.string(), zip: z.string() }) }),
    books: z.array(z.object({ title: z.string(), year: z.number().int().min(1450) })).min(1),
  }),
  "optional fields and defaults": z.object({
    required: z.string(),
    optional: z.string().optional(),
    withDefault: z.number().default(7),
  }),
  unions: z.object({
    either: z.union([z.string(), z.number()]),
    shape: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("circle"), radius: z.number().positive() }),
      z.object({ kind: z.literal("square"), side: z.number() }),
    ]),
  }),
  records: z.object({ scores: z.record(z.string(), z.number()) }),
};

describe("instanceOf", () => {
  for (const [name, schema] of Object.entries(zodCases)) {
    it(`gives an instance the zod schema itself accepts: ${name}`, () => {
      const json = z.toJSONSchema(schema);
      const instance = instanceOf(json);
      expect(() => schema.parse(instance)).not.toThrow();
      // Deterministic: the same schema, the same value.
      expect(instanceOf(json)).toEqual(instance);
    });
  }

  it("a recursive schema ($ref to $defs) ends, and is valid", () => {
    interface Node {
      name: string;
      children: Node[];
    }
    const node: z.ZodType<Node> = z.lazy(() => z.object({ name: z.string(), children: z.array(node) }));
    const json = z.toJSONSchema(z.object({ root: node }), { reused: "ref", cycles: "ref" });
    const instance = instanceOf(json);
    expect(() => z.object({ root: node }).parse(instance)).not.toThrow();
  });

  it.each([
    [
      "OpenAI strict mode: every property required, no others",
      {
        type: "object",
        properties: {
          city: { type: "string" },
          unit: { type: ["string", "null"], enum: ["c", "f", null] },
          days: { type: "integer", minimum: 1, maximum: 14 },
        },
        required: ["city", "unit", "days"],
        additionalProperties: false,
      },
    ],
    [
      "$defs and allOf",
      {
        $defs: { base: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] } },
        allOf: [
          { $ref: "#/$defs/base" },
          {
            type: "object",
            properties: { ratio: { type: "number", exclusiveMinimum: 0 } },
            required: ["ratio"],
          },
        ],
      },
    ],
    ["a bare array", { type: "array", items: { type: "string", enum: ["a", "b"] }, minItems: 2 }],
    ["a const", { const: 42 }],
    ["no type at all, only properties", { properties: { x: { type: "number" } }, required: ["x"] }],
    ["anyOf with null", { anyOf: [{ type: "null" }, { type: "boolean" }] }],
  ])("gives a valid instance of %s", (_name, schema) => {
    const instance = instanceOf(schema);
    const check = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    expect(check.safeParse(instance).success).toBe(true);
  });

  it("follows draft-7 definitions and draft-4 exclusive bounds", () => {
    const schema = {
      definitions: { id: { type: "integer", minimum: 0, exclusiveMinimum: true } },
      type: "object",
      properties: {
        id: { $ref: "#/definitions/id" },
        ratio: { type: "number", maximum: 0, exclusiveMaximum: true },
      },
    };
    const value = instanceOf(schema) as { id: number; ratio: number };
    expect(Number.isInteger(value.id) && value.id > 0).toBe(true);
    expect(value.ratio).toBeLessThan(0);
  });

  it("reads as an example: property names for strings, bounds for numbers", () => {
    expect(instanceOf(z.toJSONSchema(z.object({ name: z.string(), age: z.number().int() })))).toEqual({
      name: "name",
      age: 0,
    });
  });
});
