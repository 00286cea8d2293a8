// `cron` in config.yaml: the profile's scheduled jobs. The jobs themselves live in the profile's
// store (`tenax cron add`, /api/jobs); this section says how they are run.
import { z } from "zod";
import { flag, intBetween, positiveInt, text } from "./schema-parts.js";

export const cronSchema = z.strictObject({
  /** Whether the gateway runs due jobs (`tenax cron tick` runs them whatever this says). */
  enabled: flag().default(true),
  /** The profile's time zone for schedules that name none; the machine's when unset. */
  timezone: text("an IANA time zone name, e.g. Europe/Berlin").optional(),
  /** Job runs at once, within gateway.max_turns; more due runs wait their turn, claimed. */
  max_concurrent: intBetween(1, 256).default(4),
  /** Seconds a run may take when its job sets no --timeout. */
  default_timeout: positiveInt().default(600),
  /** Days run records (and their delivered outbox entries) are kept. */
  run_retention_days: positiveInt().default(30),
});
export type CronConfig = z.infer<typeof cronSchema>;
