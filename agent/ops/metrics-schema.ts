// The metrics endpoint's config section (`metrics`): its schema, and its type derived from it
// (apart from metrics.ts so config checking does not load prom-client).
import { bool, int, obj, str, type Infer } from "../../lib/schema-builders.js";

export const METRICS_SCHEMA = obj(
  {
    enabled: bool(true, "serve /metrics, /healthz and /readyz"),
    host: str("address to bind (loopback by default)", { default: "127.0.0.1" }),
    port: int(0, 65535, 9464, "port (0 = ephemeral)"),
  },
  "Prometheus metrics and health endpoints",
);

export type MetricsConfig = Infer<typeof METRICS_SCHEMA>;
