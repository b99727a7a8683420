// The HMI's live pages cannot be held by one client, nor by viewers without a login against an
// operator, and a page that stops reading is dropped on loopback too (issue #54:
// agent/hmi/live-pages.ts). Against the demo's HMI (maxClients 8, 2 per address, 4 per user, a
// users file; each stream lasting 5 s here, 60 s by default), through its real server, with raw
// sockets from loopback addresses of their own.
import { readFileSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemo, type RunningDemo } from "../cli/demo.js";
import { metricValue } from "../tooling/prometheus-text.js";
import { waitFor } from "./helpers/processes.js";
import { tempDir } from "./helpers/temp-dirs.js";

describe("the HMI's live pages", () => {
  let demo: RunningDemo;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    const agentConfig = join(tempDir("podwarden-live-"), "demo-pod.yaml");
    writeFileSync(agentConfig, `${readFileSync("configs/demo-pod.yaml", "utf8")}\nhmi:\n  livePageS: 5\n`);
    demo = await startDemo({ simConfig: "configs/sim-pod.yaml", agentConfig, brokerPort: 0, boardMs: 0, out: process.stdout, interactive: false });
  }, 60_000);
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await demo?.stop();
  });

  /**
   * A live page from `from` that reads its answer's status line, then stops reading (the socket
   * paused: the kernel's buffers fill, as with a page that is frozen or a client that holds a slot).
   */
  const page = (from: string, cookie?: string): Promise<{ status: number; text: string; socket: Socket }> => {
    const u = new URL(demo.hmiUrl!);
    const socket = connect({ host: u.hostname, port: Number(u.port), localAddress: from });
    sockets.push(socket);
    return new Promise((resolve, reject) => {
      socket.once("error", reject);
      socket.write(`GET /api/live HTTP/1.1\r\nHost: ${u.host}\r\n${cookie === undefined ? "" : `Cookie: ${cookie}\r\n`}\r\n`);
      let got = "";
      const onData = (d: Buffer): void => {
        got += d.toString("latin1");
        const status = /^HTTP\/1\.1 (\d{3})/.exec(got);
        if (status === null) return;
        socket.off("data", onData);
        socket.pause();
        resolve({ status: Number(status[1]), text: got, socket });
      };
      socket.on("data", onData);
    });
  };
  const refused = async (reason: string): Promise<number> => metricValue(await (await fetch(demo.urls.metrics!)).text(), "podwarden_hmi_pages_refused_total", { reason });

  it("holds two pages from one address, half the slots for pages without a login, and still one for a logged-in operator; a page that stops reading gives its slot back at the end of its stream", async () => {
    const one = [await page("127.0.3.1"), await page("127.0.3.1"), await page("127.0.3.1")];
    expect(one.map((p) => p.status)).toEqual([200, 200, 503]);
    expect(one[2].text).toContain("hmi.maxClientsPerAddress");
    expect(await refused("per-address")).toBe(1);
    // four without a login in all (of 8): the fifth waits, from any address
    expect((await page("127.0.3.2")).status).toBe(200);
    expect((await page("127.0.3.3")).status).toBe(200);
    const fifth = await page("127.0.3.4");
    expect(fifth.status).toBe(503);
    expect(fifth.text).toContain("without a login");
    // an operator who logs in finds a slot
    const login = await fetch(new URL("/api/login", demo.hmiUrl!), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(demo.hmiLogin) });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    expect((await page("127.0.3.5", cookie)).status).toBe(200);
    // none of these pages reads past its status line; on loopback the kernel's buffers hold what
    // is sent for minutes, but each stream ends at its lifetime, and the slots are free again
    await waitFor(async () => (await page("127.0.3.1")).status === 200, "a page from the first address again", 20_000, 500);
    expect((await page("127.0.3.1")).status).toBe(200);
    // the streams of 127.0.3.2 and .3 began after the first address's, and end after them: a
    // slot without a login is free once one of them has (a loaded CI machine asked at once and
    // found none, 2026-12-06)
    await waitFor(async () => (await page("127.0.3.7")).status === 200, "a page from a new address", 20_000, 500);
  }, 60_000);
});
