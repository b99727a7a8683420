// The Redfish client's config section (`redfishClient`): BMCs, the resources read from them as
// points, and the Controls written as outputs. Its schema and type, apart from the driver, so
// config checking does not load undici. The driver knows nothing of racks: a point is a
// resource path and a property, named `<device>.<point>` like a Modbus point.
import { existsSync } from "node:fs";
import { arr, bool, int, num, obj, oneOf, optional, optionalObj, str, type Infer } from "../../lib/schema-builders.js";

const NAME = { pattern: "^[A-Za-z][A-Za-z0-9_-]*$", minLength: 1, maxLength: 64 };
const PATH = { pattern: "^/redfish/v1(/[A-Za-z0-9_.:@%-]+)*$", maxLength: 512 };

export const REDFISH_POINT_SCHEMA = obj(
  {
    name: str("point name: its id is <device>.<name>", NAME),
    path: str("the resource's URI on the BMC, e.g. /redfish/v1/Chassis/1/Sensors/RackPower", PATH),
    kind: oneOf(
      ["reading", "leak"] as const,
      "reading",
      "reading: a Sensor (or any resource) whose `property` is a number, good only while Status.State is Enabled and Status.Health is OK; leak: a LeakDetector, whose DetectorState becomes 0 (OK), 1 (Critical: wet) or 2 (Warning: a detector fault, handled as a leak rope's cable fault), and whose events on the SSE stream are pushed samples",
    ),
    property: str("the property read, for kind reading (a JSON path: a.b)", { default: "Reading", pattern: "^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)*$" }),
    scale: num(-1e9, 1e9, 1, "engineering = value × scale + offset (W to kW: 0.001)"),
    offset: num(-1e9, 1e9, 0, "engineering = value × scale + offset"),
    unit: optional(str("engineering unit", { maxLength: 16 })),
  },
  "a point read from a Redfish resource",
  ["name", "path"],
);

export const REDFISH_OUTPUT_SCHEMA = obj(
  {
    name: str("output name: its id is <device>.<name>", NAME),
    path: str("the Control resource written, e.g. /redfish/v1/Chassis/1/Controls/PowerLimit", PATH),
    property: str("the property PATCHed and read back", { default: "SetPoint", pattern: "^[A-Za-z][A-Za-z0-9_]*$" }),
    scale: num(1e-9, 1e9, 1, "the value sent = engineering × scale (kW to W: 1000)"),
    tolerance: num(0, 1e9, 0.5, "read-back within this of what was sent is verified, in the BMC's units"),
    unit: optional(str("engineering unit", { maxLength: 16 })),
  },
  "a Control written with PATCH and If-Match, then read back",
  ["name", "path"],
);

export const REDFISH_DEVICE_SCHEMA = obj(
  {
    name: str("device name (a BMC)", NAME),
    url: str("the BMC's base URL: https://host[:port]; http:// only with allowPlaintext", { pattern: "^https?://[^/?#\\s]+$", maxLength: 256 }),
    allowPlaintext: bool(false, "take an http:// URL: credentials and caps cross the wire in clear, so only for a simulator or a BMC on a private link"),
    tls: optionalObj(
      {
        caFile: optional(str("PEM file of the only CA the BMC's certificate may chain to (the system's CAs are not trusted)", { minLength: 1 })),
        fingerprint256: optional(str("SHA-256 fingerprint of the BMC's own certificate (AA:BB:…), for a self-signed BMC: that certificate and no other is accepted", { pattern: "^([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$" })),
        servername: optional(str("the name the certificate must carry, if not the URL's host", { minLength: 1 })),
      },
      "how the BMC's certificate is pinned: a CA, a fingerprint, or both (an https:// URL needs one)",
    ),
    auth: obj(
      {
        mode: oneOf(["session", "basic"] as const, "session", "session: log in once at SessionService and send X-Auth-Token (logged out at stop); basic: HTTP Basic on every request"),
        user: str("user name", { minLength: 1, maxLength: 64 }),
        passwordEnv: optional(str("environment variable holding the password", { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" })),
        passwordFile: optional(str("file holding the password (its first line; systemd's LoadCredential= fits)", { minLength: 1 })),
        basicFallback: bool(false, "session mode, with a BMC that has no session service (404, 405 or 501 to the session POST): send HTTP Basic instead, said once in the log; off, such a BMC is not connected"),
      },
      "credentials; the password comes from the environment or a file, never from this config",
      ["user"],
    ),
    timeoutMs: int(50, 60_000, 2000, "per request, headers and body, ms"),
    pollMs: int(100, 600_000, 1000, "every configured resource is read this often, ms"),
    staleMs: int(100, 3_600_000, 5000, "a reading whose ReadingTime and value have both not moved for this long is stale, whatever its Health says (ReadingTime is compared with itself, not with this controller's clock, so a BMC's clock offset does not matter; a value that changes under a ReadingTime that does not is live: some BMCs never move it); a resource that does not answer is bad at once"),
    maxBodyBytes: int(1024, 1_048_576, 65_536, "a larger response is refused unread, bytes"),
    breaker: obj(
      {
        failures: int(1, 100, 3, "consecutive failed polls that open it"),
        openMs: int(10, 600_000, 1000, "first open period, ms"),
        maxOpenMs: int(10, 3_600_000, 30_000, "longest open period, ms"),
      },
      "circuit breaker: an open BMC is not polled until a probe succeeds",
    ),
    events: obj(
      {
        enabled: bool(true, "hold the EventService's SSE stream open: a leak detector's event is a pushed sample that wakes the control tick at once"),
        path: optional(str("the stream's URI; absent: the EventService's ServerSentEventUri, read each time the stream opens (a BMC without one is polled, said once)", PATH)),
        recheckS: int(1, 86_400, 600, "a BMC found without Server-Sent Events is asked again this often (quietly): its detectors are polled meanwhile, and its push subscription, where it has one, is checked to be still there, s"),
        push: bool(true, "a BMC without Server-Sent Events is asked to push its leak events to redfishClient.eventListener (an EventDestination subscription, deleted at the stop), where a listener is configured"),
        maxEventBytes: int(256, 1_048_576, 16_384, "an event larger than this ends the stream (it is reopened and every detector re-read), bytes"),
        maxEventsPerS: int(1, 10_000, 50, "events parsed a second; beyond it they are not parsed, and every leak detector is re-read instead"),
        reconnect: obj({ baseMs: int(10, 600_000, 500, "first wait, ms"), maxMs: int(10, 3_600_000, 30_000, "longest wait, ms") }, "reopening a dropped stream (every detector is re-read when it is back; until then they are polled)"),
      },
      "the EventService's Server-Sent Events",
    ),
    points: arr(REDFISH_POINT_SCHEMA, "resources read as points", { default: [], maxItems: 256 }),
    outputs: arr(REDFISH_OUTPUT_SCHEMA, "Controls written as outputs", { default: [], maxItems: 64 }),
  },
  "a BMC",
  ["name", "url", "auth"],
);

export const REDFISH_CLIENT_SCHEMA = obj(
  {
    devices: arr(REDFISH_DEVICE_SCHEMA, "BMCs read (and capped) over Redfish", { default: [], maxItems: 64 }),
    eventListener: optional(
      obj(
        {
          host: str("address to bind, on the network the BMCs reach the controller on", { default: "127.0.0.1" }),
          port: int(0, 65535, 8091, "port (0 = ephemeral)"),
          url: optional(str("the base URL the BMCs are told to push to (http://10.0.4.2:8091); absent: http://<host>:<port>", { pattern: "^https?://[^/\\s]+$", maxLength: 256 })),
          maxConnections: int(1, 1024, 64, "connections open at once; one more is closed as it is accepted"),
          tls: optional(
            obj(
              { certFile: str("PEM certificate (its chain after it)", { minLength: 1 }), keyFile: str("PEM private key", { minLength: 1 }) },
              "serve over HTTPS with this certificate: on a network others share, so that the subscriptions' tokens, which let an event through, are not read off the wire (and url then starts https://)",
              ["certFile", "keyFile"],
            ),
          ),
        },
        "where BMCs without Server-Sent Events push their leak events (Redfish EventDestination subscriptions): each event is bounded in size and rate, and must carry its subscription's token, before it is parsed",
        ["port"],
      ),
    ),
  },
  "rack BMCs over Redfish: sensors, leak detectors and power limits (docs/redfish.md, The client)",
);

export type RedfishClientConfig = Infer<typeof REDFISH_CLIENT_SCHEMA>;
export type RedfishDeviceConfig = RedfishClientConfig["devices"][number];
export type RedfishPointConfig = RedfishDeviceConfig["points"][number];
export type RedfishOutputConfig = RedfishDeviceConfig["outputs"][number];
export type RedfishListenerConfig = NonNullable<RedfishClientConfig["eventListener"]>;

/** What the schema cannot say: names unique, a pinned certificate for https, a password source, files that exist. */
export function redfishClientProblems(c: RedfishClientConfig): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  c.devices.forEach((d, i) => {
    const at = `redfishClient.devices[${i}]`;
    if (names.has(d.name)) out.push(`${at}.name: duplicate device name "${d.name}"`);
    names.add(d.name);
    const https = d.url.startsWith("https://");
    if (!https && !d.allowPlaintext) out.push(`${at}.url: http:// sends the BMC's credentials in clear: use https:// with tls.caFile or tls.fingerprint256, or set allowPlaintext: true`);
    if (https && d.tls?.caFile === undefined && d.tls?.fingerprint256 === undefined) out.push(`${at}.tls: an https:// BMC needs caFile or fingerprint256 (its certificate is pinned; the system's CAs are not trusted)`);
    if (d.tls?.caFile !== undefined && !existsSync(d.tls.caFile)) out.push(`${at}.tls.caFile: no file ${d.tls.caFile}`);
    const a = d.auth;
    if ((a.passwordEnv === undefined) === (a.passwordFile === undefined)) out.push(`${at}.auth: give exactly one of passwordEnv and passwordFile`);
    if (a.passwordFile !== undefined && !existsSync(a.passwordFile)) out.push(`${at}.auth.passwordFile: no file ${a.passwordFile}`);
    if (d.breaker.maxOpenMs < d.breaker.openMs) out.push(`${at}.breaker.maxOpenMs: must be >= openMs`);
    if (d.events.reconnect.maxMs < d.events.reconnect.baseMs) out.push(`${at}.events.reconnect.maxMs: must be >= baseMs`);
    const ids = new Set<string>();
    for (const [what, list] of [["points", d.points], ["outputs", d.outputs]] as const) {
      list.forEach((p, j) => {
        if (ids.has(p.name)) out.push(`${at}.${what}[${j}].name: duplicate name "${p.name}" on this device`);
        ids.add(p.name);
      });
    }
  });
  const l = c.eventListener;
  for (const f of [l?.tls?.certFile, l?.tls?.keyFile]) if (f !== undefined && !existsSync(f)) out.push(`redfishClient.eventListener.tls: no file ${f}`);
  return out;
}
