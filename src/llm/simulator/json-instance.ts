// A deterministic instance of a JSON Schema, for the simulator's structured output (response_format
// json_schema, and the arguments of a tool call a request forces): the same schema always gives the
// same value, valid against it for the schemas clients send (zod's, Pydantic's, OpenAI's strict
// mode): objects with every declared property, enums, consts, arrays within their bounds, numbers
// within theirs, strings of the asked length and format, nested and referenced ($ref to $defs or
// definitions), anyOf/oneOf (the first branch), allOf (merged). A `pattern` is not solved: a
// string is only as valid as its format and length make it.

type Schema = Record<string, unknown>;

/** How deep a recursive schema is followed before the smallest value that ends it is chosen. */
const MAX_DEPTH = 8;

const FORMATS: Record<string, string> = {
  "date-time": "2024-01-01T00:00:00Z",
  date: "2024-01-01",
  time: "00:00:00",
  duration: "P1D",
  email: "user@example.com",
  "idn-email": "user@example.com",
  hostname: "example.com",
  "idn-hostname": "example.com",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  uri: "https://example.com/",
  "uri-reference": "https://example.com/",
  iri: "https://example.com/",
  url: "https://example.com/",
  uuid: "00000000-0000-4000-8000-000000000000",
};

/** A value valid against `schema`; `name` is what the value is called (a property's name), if anything. */
export function instanceOf(schema: unknown, name = "value"): unknown {
  return new Instance(isSchema(schema) ? schema : {}).of(schema, name, 0, 0);
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

class Instance {
  constructor(private readonly root: Schema) {}

  /** `nth` tells siblings apart (array items), so items that must be unique are. */
  of(input: unknown, name: string, depth: number, nth: number): unknown {
    if (input === true || input === undefined) return name;
    if (!isSchema(input)) return null;
    const schema = this.resolve(input, depth);
    if ("const" in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[nth % schema.enum.length];
    if ("default" in schema && nth === 0) return schema.default;
    const branches = (schema.anyOf ?? schema.oneOf) as unknown;
    if (Array.isArray(branches) && branches.length > 0) {
      // Past the depth limit, a branch that ends the recursion (null, say) is preferred.
      const pick =
        depth >= MAX_DEPTH
          ? (branches.find((b) => isSchema(b) && b.type === "null") ?? branches[0])
          : branches[0];
      return this.of(
        { ...without(schema, "anyOf", "oneOf"), ...(isSchema(pick) ? pick : {}) },
        name,
        depth + 1,
        nth,
      );
    }
    switch (typeOf(schema, depth)) {
      case "object":
        return this.object(schema, depth, nth);
      case "array":
        return this.array(schema, name, depth);
      case "integer":
        return number(schema, true, nth);
      case "number":
        return number(schema, false, nth);
      case "boolean":
        return nth % 2 === 0;
      case "null":
        return null;
      default:
        return string(schema, name, nth);
    }
  }

  /** $ref followed (within this document) and allOf merged into one schema. */
  private resolve(schema: Schema, depth: number): Schema {
    let out = schema;
    for (let hops = 0; typeof out.$ref === "string" && hops < MAX_DEPTH; hops++) {
      const target = this.pointer(out.$ref as string);
      out = { ...without(out, "$ref"), ...target };
    }
    if (Array.isArray(out.allOf) && depth < MAX_DEPTH) {
      let merged: Schema = without(out, "allOf");
      for (const part of out.allOf) {
        if (!isSchema(part)) continue;
        const p = this.resolve(part, depth + 1);
        merged = {
          ...merged,
          ...p,
          properties: { ...(merged.properties as Schema), ...(p.properties as Schema) },
          required: [...arrayOf(merged.required), ...arrayOf(p.required)],
        };
      }
      out = merged;
    }
    return out;
  }

  private pointer(ref: string): Schema {
    if (!ref.startsWith("#")) return {};
    let at: unknown = this.root;
    for (const raw of ref.slice(1).split("/").filter(Boolean)) {
      const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      at = isSchema(at) ? at[key] : undefined;
    }
    return isSchema(at) ? at : {};
  }

  private object(schema: Schema, depth: number, nth: number): Record<string, unknown> {
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(arrayOf(schema.required).filter((r): r is string => typeof r === "string"));
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(properties)) {
      // Past the depth limit only what must be there, so a recursive schema ends.
      if (depth >= MAX_DEPTH && !required.has(key)) continue;
      out[key] = this.of(sub, key, depth + 1, nth);
    }
    for (const key of required) if (!(key in out)) out[key] = key;
    const min = typeof schema.minProperties === "number" ? schema.minProperties : 0;
    const extra = isSchema(schema.additionalProperties) ? schema.additionalProperties : {};
    for (let i = 1; Object.keys(out).length < min; i++)
      out[`key${i}`] = this.of(extra, `key${i}`, depth + 1, 0);
    return out;
  }

  private array(schema: Schema, name: string, depth: number): unknown[] {
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
    const min = Math.max(typeof schema.minItems === "number" ? schema.minItems : 0, prefix.length);
    const max = typeof schema.maxItems === "number" ? schema.maxItems : Number.POSITIVE_INFINITY;
    // One item shows the shape; none past the depth limit, unless the schema asks for some.
    const count = Math.min(max, Math.max(min, depth >= MAX_DEPTH ? 0 : 1));
    const items = Array.isArray(schema.items) ? undefined : schema.items;
    return Array.from({ length: count }, (_, i) => this.of(prefix[i] ?? items, name, depth + 1, i));
  }
}

function typeOf(schema: Schema, depth: number): string {
  const type = schema.type;
  if (typeof type === "string") return type;
  if (Array.isArray(type) && type.length > 0) {
    // A nullable value is shown with its value, until the depth limit asks for the end.
    const real = type.filter((t) => t !== "null");
    if (depth >= MAX_DEPTH && type.includes("null")) return "null";
    return String(real[0] ?? type[0]);
  }
  if (isSchema(schema.properties) || "required" in schema || "additionalProperties" in schema)
    return "object";
  if ("items" in schema || "prefixItems" in schema) return "array";
  if ("minimum" in schema || "maximum" in schema || "multipleOf" in schema) return "number";
  return "string";
}

function number(input: Schema, integer: boolean, nth: number): number {
  // Draft 4 says exclusiveness as a flag beside minimum and maximum.
  const schema = { ...input };
  if (schema.exclusiveMinimum === true) schema.exclusiveMinimum = schema.minimum;
  if (schema.exclusiveMaximum === true) schema.exclusiveMaximum = schema.maximum;
  const step =
    typeof schema.multipleOf === "number" && schema.multipleOf > 0 ? schema.multipleOf : integer ? 1 : 0;
  let low = typeof schema.minimum === "number" ? schema.minimum : Number.NEGATIVE_INFINITY;
  let high = typeof schema.maximum === "number" ? schema.maximum : Number.POSITIVE_INFINITY;
  const unit = step > 0 ? step : 1;
  if (typeof schema.exclusiveMinimum === "number")
    low = Math.max(low, schema.exclusiveMinimum + (integer || step > 0 ? 0 : unit / 2));
  if (typeof schema.exclusiveMaximum === "number")
    high = Math.min(high, schema.exclusiveMaximum - (integer || step > 0 ? 0 : unit / 2));
  let value = Math.min(Math.max(nth, low), high);
  if (step > 0) {
    value = Math.ceil(value / step) * step;
    const exclusiveLow = typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum;
    if (exclusiveLow) value += step;
    const exclusiveHigh = typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum;
    if (value > high || exclusiveHigh) value -= step;
  }
  return Object.is(value, -0) ? 0 : value;
}

function string(schema: Schema, name: string, nth: number): string {
  const format = typeof schema.format === "string" ? FORMATS[schema.format] : undefined;
  let value = format ?? (nth === 0 ? name : `${name} ${nth + 1}`);
  const min = typeof schema.minLength === "number" ? schema.minLength : 0;
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Number.POSITIVE_INFINITY;
  if (value.length < min) value = value.padEnd(min, "x");
  if ([...value].length > max) value = [...value].slice(0, max).join("");
  return value;
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function without(schema: Schema, ...keys: string[]): Schema {
  const out = { ...schema };
  for (const key of keys) delete out[key];
  return out;
}
