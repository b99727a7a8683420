// The HMI answers only to the names it was given (hmi.allowedHosts), an IP address and localhost:
// a page elsewhere that points a name of its own at the controller (DNS rebinding) reaches
// nothing, not the state, not a login (issue #54). Against the demo's HMI, through its real
// server, with the Host header a browser would send.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostAllowed } from "../agent/hmi/http.js";
import { startDemo, type RunningDemo } from "../cli/demo.js";

/** A request to the HMI with the Host header `host`; its status. */
function ask(base: string, path: string, host: string, body?: string): Promise<number> {
  const u = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: body === undefined ? "GET" : "POST", headers: { host, ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }) } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the HMI's Host check", () => {
  it("passes IP addresses, localhost and the names listed, with or without a port, and nothing else", () => {
    for (const h of ["127.0.0.1", "127.0.0.1:8470", "10.1.2.3", "[::1]:8470", "[fe80::1]", "localhost", "LOCALHOST:80", "pod-a.site.example", "Pod-A.Site.Example:8443", undefined]) expect(hostAllowed(h, ["pod-a.site.example"]), String(h)).toBe(true);
    for (const h of ["evil.example", "evil.example:8470", "pod-a.site.example.evil.example", "127.0.0.1.evil.example", "localhost.evil.example", ""]) expect(hostAllowed(h, ["pod-a.site.example"]), h).toBe(false);
  });

  describe("on the demo's HMI", () => {
    let demo: RunningDemo;
    beforeAll(async () => {
      demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig: "configs/demo-pod.yaml", brokerPort: 0, boardMs: 0, out: process.stdout, interactive: false });
    }, 60_000);
    afterAll(async () => demo?.stop());

    it("refuses a request naming another host with 421, the state and a login alike, and serves its own", async () => {
      const base = demo.hmiUrl!;
      const own = new URL(base).host;
      const login = JSON.stringify(demo.hmiLogin);
      expect(await ask(base, "/api/state", "evil.example")).toBe(421);
      expect(await ask(base, "/", "evil.example:8470")).toBe(421);
      expect(await ask(base, "/api/login", "evil.example", login)).toBe(421);
      expect(await ask(base, "/api/state", own)).toBe(200);
      expect(await ask(base, "/api/state", `localhost:${new URL(base).port}`)).toBe(200);
      expect(await ask(base, "/api/login", own, login)).toBe(200);
    }, 30_000);
  });
});
