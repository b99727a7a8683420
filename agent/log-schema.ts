// The logging config section (`log`): its schema and its type.
import { obj } from "../lib/schema-builders.js";

export interface LogConfig {
  level: string;
  modules: Record<string, string>;
}

export const LOG_SCHEMA = obj(
  {
    level: { enum: ["fatal", "error", "warn", "info", "debug", "trace"], default: "info", description: "log level" },
    modules: { type: "object", additionalProperties: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] }, default: {}, description: "per-module levels, e.g. {drivers: warn}" },
  },
  "logging (pino, JSON on stdout)",
);
