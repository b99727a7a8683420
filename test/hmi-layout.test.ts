// The HMI page's layout, as an operator sees it at the widths of a control-room screen: Debian's
// chromium, headless, driven by playwright-core, against `podwarden run` and the simulator
// (issue #50: the loops table clipped at every width, 9 px P&ID text at 1280 px, one unitless
// trend axis for °C and %, colliding time labels, an unplugged rack read as a leak warning).
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoConfigFor, TEST_POD } from "./helpers/agent.js";
import { startDaemon, type Daemon, untilRunning } from "./helpers/daemon.js";
import { stopProcess } from "./helpers/processes.js";
import { startTestSim, type TestSim } from "./helpers/sim.js";
import { tempDir } from "./helpers/temp-dirs.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts";

describe("the HMI page's layout in chromium", () => {
  let t: TestSim;
  let dir: string;
  let daemon: Daemon;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: npm test installs Debian's chromium (scripts/test-peers.sh) (or set CHROMIUM)`);
    t = await startTestSim({ devices: { leaseMs: 1500 } });
    dir = tempDir("podwarden-hmi-layout-");
    mkdirSync(join(dir, "state"));
    const file = join(dir, "agent.yaml");
    writeFileSync(
      file,
      stringify(
        demoConfigFor(t.sim, (c) => {
          c.pod = `${TEST_POD}-hmi-layout`;
          c.stateDir = join(dir, "state");
          c.hmi = { port: 0 };
        }),
      ),
    );
    daemon = startDaemon(file);
    await untilRunning(daemon);
    const served = daemon.lines.find((l) => l.msg === "hmi served") as { url?: string } | undefined;
    if (served?.url === undefined) throw new Error(`no "hmi served" line: ${JSON.stringify(daemon.lines.slice(-5))}`);
    base = served.url;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (daemon !== undefined) await stopProcess(daemon.child, "SIGKILL");
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const open = async (width: number): Promise<Page> => {
    const p = await (await browser.newContext({ viewport: { width, height: 1000 } })).newPage();
    await p.goto(base);
    await p.locator("body:not(.stale)").waitFor();
    return p;
  };

  it("words an unplugged rack's leak sensor as a comms fault, on the rack and in its alarm, never as a leak", async () => {
    const p = await open(1600);
    try {
      t.sim.inject({ device: "rack-6", offline: true });
      await p.locator('[data-rack="rack-6"] [data-field="leak"]', { hasText: /^leak: COMMS FAULT$/ }).waitFor({ timeout: 15_000 });
      await p.locator('#alarms tbody tr[data-alarm="leak-sensor:rack-6"] td.message', { hasText: /^leak sensor at rack-6 not read, a comms fault \(rack-6\.leak\w*: .+\): leak detection impaired$/ }).waitFor({ timeout: 15_000 });
      expect(await p.locator('#alarms tbody tr[data-alarm^="leak:"]').count()).toBe(0);
    } finally {
      t.sim.inject({ device: "rack-6", offline: false });
      await p.context().close();
    }
  }, 60_000);

  it("lays out at 1280, 1600 and 1920 px: nothing clipped or scrolled sideways, text 12 px or more, the CDU's readings, an axis per unit", async () => {
    // a latched leak on rack-3 puts the overview's longest words on the page (LEAK, ISOLATED, CLOSED)
    t.sim.inject({ leak: "rack-3" });
    const first = await open(1600);
    await first.locator('[data-rack="rack-3"] [data-field="loop"]', { hasText: /^ISOLAT/ }).waitFor({ timeout: 15_000 });
    await first.context().close();
    // the page's geometry, measured in the browser: strings, since this project's types have no DOM
    const LAYOUT = `(() => {
      const doc = document.documentElement;
      const sections = [...document.querySelectorAll("section")].filter((x) => !x.hidden);
      const inside = (el) => { const r = el.getBoundingClientRect(), b = el.closest("section").getBoundingClientRect(); return r.left >= b.left - 0.5 && r.right <= b.right + 0.5; };
      const small = [];
      for (const el of document.querySelectorAll("body *")) {
        if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "") || el.getClientRects().length === 0) continue;
        const scale = el instanceof SVGElement ? el.ownerSVGElement.getScreenCTM().a : 1;
        const px = parseFloat(getComputedStyle(el).fontSize) * scale;
        if (px < 12) small.push(el.tagName + " " + JSON.stringify(el.textContent.slice(0, 30)) + " " + px.toFixed(1) + " px");
      }
      const texts = [...document.querySelectorAll("#overview text")].filter((x) => x.textContent !== "").map((x) => [x.textContent, x.getBoundingClientRect()]);
      const overlaps = [];
      for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
        const a = texts[i][1], b = texts[j][1];
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push(texts[i][0] + " / " + texts[j][0]);
      }
      const outOfBox = [];
      for (const g of document.querySelectorAll("#overview [data-rack], #overview #cdu")) {
        const box = g.querySelector("rect.box").getBoundingClientRect();
        for (const x of g.querySelectorAll("rect.box ~ text")) { const r = x.getBoundingClientRect(); if (r.left < box.left || r.right > box.right || r.top < box.top || r.bottom > box.bottom) outOfBox.push(x.textContent); }
      }
      const ctx = document.createElement("canvas").getContext("2d");
      ctx.font = "12px system-ui, sans-serif";
      return {
        pageScrolls: doc.scrollWidth > doc.clientWidth,
        sectionsScrolling: sections.filter((x) => x.scrollWidth > x.clientWidth).map((x) => x.id),
        columnsOutside: [...document.querySelectorAll("#loops th, #alarms th, #devices th")].filter((x) => !inside(x)).map((x) => x.textContent),
        columns: document.querySelectorAll("#loops th, #alarms th, #devices th").length,
        small, overlaps, outOfBox,
        racksDrawn: document.querySelectorAll("#overview [data-rack]").length,
        axes: document.querySelector("#trend-chart").dataset.axes,
        labelGapPx: Number(document.querySelector("#trend-chart").dataset.xLabelGapPx),
        labelWidthPx: ctx.measureText("00:00:00").width,
      };
    })()`;
    type Layout = { pageScrolls: boolean; sectionsScrolling: string[]; columnsOutside: string[]; columns: number; small: string[]; overlaps: string[]; outOfBox: string[]; racksDrawn: number; axes: string; labelGapPx: number; labelWidthPx: number };
    for (const width of [1280, 1600, 1920]) {
      const p = await open(width);
      try {
        // the CDU box: every reading the simulator's profile names, as numbers
        for (const [field, re] of [["supply", /^supply \d+\.\d °C$/], ["return", /^return \d+\.\d °C$/], ["flow", /^flow \d+ L\/min$/], ["level", /^level \d+ %$/]] as const) {
          await p.locator(`#cdu [data-field="${field}"]`, { hasText: re }).waitFor({ timeout: 10_000 });
        }
        await p.locator("#trend-select option").first().waitFor({ state: "attached" });
        await p.locator("#trend-select").selectOption(["rack-3.returnTempC", "rack-3.valve"]);
        await p.locator("#trend-chart[data-x-label-gap-px] .uplot canvas").waitFor();
        const l = await p.evaluate<Layout>(LAYOUT);
        expect({ width, pageScrolls: l.pageScrolls, sectionsScrolling: l.sectionsScrolling, columnsOutside: l.columnsOutside, small: l.small, overlaps: l.overlaps, outOfBox: l.outOfBox }).toEqual({ width, pageScrolls: false, sectionsScrolling: [], columnsOutside: [], small: [], overlaps: [], outOfBox: [] });
        expect(l.columns).toBe(7 + 6 + 7);
        expect(l.racksDrawn).toBe(8);
        expect(l.axes).toBe("°C | %");
        expect(l.labelGapPx).toBeGreaterThan(l.labelWidthPx * 1.2);
        mkdirSync(ARTIFACTS, { recursive: true });
        await p.screenshot({ path: join(ARTIFACTS, `hmi-${width}.png`), fullPage: true });
      } finally {
        await p.context().close();
      }
    }
  }, 90_000);
});
