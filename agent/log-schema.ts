// The logging config section (`log`): its schema, and its type derived from it.
import { obj, oneOf, typed, type Infer } from "../lib/schema-builders.js";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;

export const LOG_SCHEMA = obj(
  {
    level: oneOf(LEVELS, "info", "log level"),
    modules: typed<Record<string, (typeof LEVELS)[number] | "silent">>({ type: "object", additionalProperties: { enum: [...LEVELS, "silent"] }, default: {}, description: "per-module levels, e.g. {drivers: warn}" }),
  },
  "logging (pino, JSON on stdout)",
);

export type LogConfig = Infer<typeof LOG_SCHEMA>;
