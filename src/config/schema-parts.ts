// The small zod pieces every section of config.yaml is built from, each with the message that says
// what was expected.
import { z } from "zod";

export const text = (what = "a non-empty string") =>
  z.string({ error: `expected ${what}` }).min(1, { error: `expected ${what}` });

export function positiveInt(what = "a positive integer") {
  const error = `expected ${what}`;
  return z.number({ error }).int({ error }).positive({ error });
}

export function intBetween(min: number, max: number) {
  const error = `expected an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
}

export function nonNegativeInt() {
  const error = "expected an integer of 0 or more";
  return z.number({ error }).int({ error }).min(0, { error });
}

export const flag = () => z.boolean({ error: "expected true or false" });
export const host = () => text("a host name or IP address");
export const port = () => intBetween(1, 65535);
export const httpUrl = z.url({ protocol: /^https?$/, error: "expected an http:// or https:// URL" });
