// The pod's web HMI (issue #23), served by `podwarden run` against the simulator and looked at in
// a real browser: Debian's chromium, headless, driven by playwright-core.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HmiView } from "../agent/hmi/view.js";
import { alarmOrder, holdWords } from "../agent/hmi/view.js";
import type { Alarm } from "../agent/supervisor/alarms.js";
import * as L from "../hotpath-as/assembly/layout.js";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, type Daemon } from "./helpers/daemon.js";
import { TestPki } from "./helpers/pki.js";
import { stopProcess, waitFor } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
/** where the browser test leaves its screenshot (a CI artifact; not committed) */
const ARTIFACTS = "test-artifacts";

describe("the HMI's view", () => {
  const alarm = (id: string, severity: Alarm["severity"], raisedAtMs: number): Alarm => ({ id, severity, message: id, source: "x", latched: false, acknowledged: false, conditionActive: true, raisedAt: "", raisedAtMs, clearingSinceMs: null, suppressed: false });

  it("orders alarms most severe first, then newest first: a new leak is the top line", () => {
    const order = alarmOrder([alarm("w-old", "Warning", 1), alarm("c-old", "Critical", 2), alarm("w-new", "Warning", 5), alarm("c-new", "Critical", 4)]).map((a) => a.id);
    expect(order).toEqual(["c-new", "c-old", "w-new", "w-old"]);
  });

  it("says in words what holds a loop", () => {
    expect(holdWords(L.LS_INTERLOCK_LEAK | L.LS_AUTOMATIC)).toBe("leak interlock: rack isolated");
    expect(holdWords(L.LS_INTERLOCK_FAILSAFE | L.LS_PV_BAD)).toBe("fail-safe: PV input bad");
    expect(holdWords(L.LS_AUTOMATIC)).toBe("");
  });
});

describe("podwarden run serves the HMI", () => {
  let t: TestSim;
  let dir: string;
  let daemon: Daemon;
  let base: string;
  let metricsUrl: string;
  let browser: Browser | null = null;
  const pod = `${TEST_POD}-hmi`;

  const configFile = (hmi: Record<string, unknown>): string => {
    const f = join(dir, `agent-${Math.random().toString(16).slice(2)}.yaml`);
    writeFileSync(
      f,
      stringify(
        demoConfigFor(t.sim, (c) => {
          c.pod = pod;
          c.stateDir = join(dir, "state");
          c.metrics = { port: 0 };
          c.hmi = { port: 0, ...hmi };
        }),
      ),
    );
    return f;
  };
  /** Starts the daemon and returns the URL its log says the HMI is served on. */
  const launch = async (file: string): Promise<{ d: Daemon; url: string }> => {
    const d = startDaemon(file);
    await waitFor(() => d.lines.some((l) => l.msg === "podwarden running"), "daemon running", 30_000);
    const served = d.lines.find((l) => l.msg === "hmi served") as { url?: string } | undefined;
    if (served?.url === undefined) throw new Error(`no "hmi served" line: ${JSON.stringify(d.lines.slice(-5))}`);
    return { d, url: served.url };
  };

  beforeAll(async () => {
    t = await startTestSim({ devices: { leaseMs: 1500 } });
    dir = mkdtempSync(join(tmpdir(), "podwarden-hmi-"));
    mkdirSync(join(dir, "state"));
    const started = await launch(configFile({ maxClients: 3 }));
    daemon = started.d;
    base = started.url;
    const m = daemon.lines.find((l) => l.msg === "metrics and health on /metrics, /healthz, /readyz") as { port: number };
    metricsUrl = `http://127.0.0.1:${m.port}/metrics`;
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await stopProcess(daemon.child, "SIGKILL");
    await t.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves every asset from the package, with a content security policy, gzipped well under 300 KB", async () => {
    let weight = 0;
    for (const path of ["", "hmi.js", "hmi.css"]) {
      const r = await fetch(base + path, { headers: { "accept-encoding": "gzip" } });
      expect(r.status).toBe(200);
      expect(r.headers.get("content-encoding")).toBe("gzip");
      expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      weight += Number(r.headers.get("content-length"));
      await r.arrayBuffer();
    }
    expect(weight).toBeLessThan(300 * 1024);
    // nothing from elsewhere: every script and stylesheet the page names is its own
    const html = await (await fetch(base)).text();
    expect([...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((u) => /^(https?:)?\/\//.test(u))).toEqual([]);
  });

  it("gives the view in words, with every rack and a null for no reading", async () => {
    const v = (await (await fetch(`${base}api/state`)).json()) as HmiView;
    expect(v.pod.pod).toBe(pod);
    expect(v.racks.map((r) => r.name)).toEqual(["rack-1", "rack-2", "rack-3", "rack-4", "rack-5", "rack-6", "rack-7", "rack-8"]);
    for (const r of v.racks) {
      expect(["open", "closed"]).toContain(r.supplyIsolation);
      for (const x of [r.flowLpm, r.returnTempC, r.powerKw]) expect(x === null || Number.isFinite(x)).toBe(true);
    }
  });

  it("bounds every request before looking at it: methods, URL length, header size, unknown paths", async () => {
    const post = await fetch(base, { method: "POST", body: "x".repeat(10_000) });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${base}api/state`, { method: "DELETE" })).status).toBe(405);
    expect((await fetch(`${base}${"a".repeat(2000)}`)).status).toBe(414);
    expect((await fetch(`${base}nothing-here`)).status).toBe(404);
    // headers beyond 8 KB: node answers 431 and closes, without calling the handler
    const u = new URL(base);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(u.port), u.hostname, () => s.write(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(16_000)}\r\n\r\n`));
      let got = "";
      s.on("data", (d: Buffer) => (got += d.toString()));
      s.on("close", () => resolve(got));
      s.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 431/);
  });

  it("holds at most maxClients live pages, refuses one more with 503, and takes one again when a page goes", async () => {
    const pages = await Promise.all([0, 1, 2].map(() => fetch(`${base}api/live`)));
    const reader = pages[0].body!.getReader();
    try {
      expect(pages.map((p) => p.status)).toEqual([200, 200, 200]);
      // each gets a view at once, not at the next period
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value as Uint8Array)).toContain("retry: 1000");
      const extra = await fetch(`${base}api/live`);
      expect(extra.status).toBe(503);
      expect(await extra.text()).toContain("hmi.maxClients");
      const metrics = await (await fetch(metricsUrl)).text();
      expect(metrics).toMatch(/^podwarden_hmi_clients 3$/m);
      expect(metrics).toMatch(/^podwarden_hmi_pages_refused_total\{reason="max-clients"\} 1$/m);
      await pages[1].body?.cancel();
      await pages[2].body?.cancel();
      await waitFor(async () => {
        const again = await fetch(`${base}api/live`);
        const ok = again.status === 200;
        await again.body?.cancel();
        return ok;
      }, "a live page accepted again");
    } finally {
      // the pages this test opened go, whatever it found: the browser test after it needs a place
      await reader.cancel();
      for (const p of pages.slice(1)) await p.body?.cancel().catch(() => undefined);
    }
  });

  it("in chromium: shows all 8 racks; a leak closes that rack's valves on the page and puts its alarm at the top; a killed daemon shows stale", async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: .ci/run installs Debian's chromium (or set CHROMIUM)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const errors: string[] = [];
    const exceptions: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => exceptions.push(String(e)));
    await page.goto(base);
    // Playwright's locators, not page functions: the page's CSP forbids eval, and this project's types have no DOM
    await page.locator("body:not(.stale)").waitFor();
    expect(await page.locator("[data-rack]").count()).toBe(8);
    const isoText = (rack: string, which: string): Promise<string | null> => page.locator(`[data-rack="${rack}"] .iso-${which} .state`).textContent();
    expect(await isoText("rack-3", "supply")).toBe("OPEN");

    const injected = performance.now();
    t.sim.inject({ leak: "rack-3" });
    const closed = (which: string): Promise<void> => page.locator(`[data-rack="rack-3"] .iso-${which} .state`, { hasText: /^CLOSED$/ }).waitFor({ timeout: 15_000 });
    await Promise.all([closed("supply"), closed("return"), page.locator('#alarms tbody tr:first-child[data-alarm="leak:rack-3"]').waitFor({ timeout: 15_000 })]);
    // a figure for the log, not an assertion: the benchmarks own the timing (BENCHMARKS.md)
    console.log(`HMI: leak injected -> rack-3 shown isolated with its alarm on top after ${(performance.now() - injected).toFixed(0)} ms`);
    expect(await page.locator('[data-rack="rack-3"] [data-field="leak"]').textContent()).toBe("LEAK CRITICAL");
    expect(await isoText("rack-4", "supply")).toBe("OPEN");
    expect(await page.locator("#alarms tbody tr").first().locator("td").first().textContent()).toBe("Critical");
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "hmi-overview.png"), fullPage: true });
    // while the daemon serves, the console stays clean
    expect(errors).toEqual([]);

    await stopProcess(daemon.child, "SIGKILL");
    await page.locator("body.stale #link", { hasText: /^STALE$/ }).waitFor({ timeout: 15_000 });
    expect(await page.locator("#stale-banner").isVisible()).toBe(true);
    // after it: only the browser's own reports of the lost connection and its retries
    expect(errors.filter((e) => !/ERR_CONNECTION_REFUSED|ERR_INCOMPLETE_CHUNKED_ENCODING/.test(e))).toEqual([]);
    expect(exceptions).toEqual([]);
    t.sim.inject({ clear: "all" });
  }, 90_000);

  it("serves over HTTPS with the configured certificate", async () => {
    await stopProcess(daemon.child, "SIGKILL"); // the test above ends it; one daemon for this pod at a time
    const pki = TestPki.create();
    try {
      await pki.ca("ca");
      await pki.issue("hmi", "127.0.0.1", "ca", "IP:127.0.0.1");
      const { d, url } = await launch(configFile({ tls: { certFile: pki.file("hmi.pem"), keyFile: pki.file("hmi.key") } }));
      try {
        expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/$/);
        const body = await new Promise<string>((resolve, reject) => {
          const req = httpsRequest(`${url}api/state`, { ca: readFileSync(pki.file("ca.pem")) }, (res) => {
            let s = "";
            res.on("data", (c: Buffer) => (s += c.toString()));
            res.on("end", () => resolve(s));
          });
          req.on("error", reject);
          req.end();
        });
        expect((JSON.parse(body) as HmiView).racks).toHaveLength(8);
        // plain HTTP on the TLS port gets nothing it can read
        await expect(fetch(url.replace("https:", "http:"))).rejects.toThrow();
      } finally {
        await stopProcess(d.child, "SIGKILL");
      }
    } finally {
      pki.remove();
    }
  }, 60_000);
});
