// The Redfish service's config section (`redfish`): its schema and type (apart from the server,
// so config checking does not load it).
import { bool, int, obj, optional, str, type Infer } from "../../lib/schema-builders.js";
import { connectionKeys, endpointProblems, serverTls } from "../hmi/schema.js";

export const REDFISH_SCHEMA = obj(
  {
    enabled: bool(false, "serve the pod as a Redfish cooling unit, read-only (docs/redfish.md)"),
    host: str("address to bind: loopback by default", { default: "127.0.0.1" }),
    port: int(0, 65535, 8443, "port (0 = ephemeral)"),
    usersFile: optional(str("who may read beyond the service root: HTTP Basic auth against a users file written by `podwarden hmi-user` (any role reads); without it, every resource is readable by whoever reaches the bound address", { minLength: 1 })),
    maxRequestsPerS: int(1, 10_000, 100, "requests taken a second, counted before the request is looked at; beyond it 503 with Retry-After"),
    tls: serverTls("serve over HTTPS with this certificate (Redfish clients expect HTTPS; plain HTTP is for loopback)"),
    nameplate: optional(
      obj(
        {
          manufacturer: optional(str("the CDU's maker, as on its nameplate", { minLength: 1, maxLength: 128 })),
          model: optional(str("its model", { minLength: 1, maxLength: 128 })),
          partNumber: optional(str("its part number", { minLength: 1, maxLength: 128 })),
          serialNumber: optional(str("its serial number", { minLength: 1, maxLength: 128 })),
          productionDate: optional(str("when it was made, an ISO 8601 date (2026-03-01)", { pattern: "^\\d{4}-\\d{2}-\\d{2}(T[0-9:.]+(Z|[+-]\\d{2}:\\d{2}))?$" })),
          version: optional(str("its hardware revision", { minLength: 1, maxLength: 64 })),
        },
        "the CDU's nameplate, from its label and documents: served on the CoolingUnit (the OCP CDU profile asks for each); a key left out is not served, never guessed",
      ),
    ),
    ...connectionKeys(),
  },
  "the pod as a Redfish cooling unit (ThermalEquipment/CDUs), served by the daemon",
);

export type RedfishConfig = Infer<typeof REDFISH_SCHEMA>;

/** What the schema cannot say: the certificate and users files exist and read. */
export function redfishProblems(c: RedfishConfig): string[] {
  return endpointProblems(c, "redfish");
}
