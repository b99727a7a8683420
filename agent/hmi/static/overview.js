// The HMI's overview: the pod as a P&ID (the CDU, the headers, each rack's valves, box and
// words), laid out to the page's width and drawn again when it changes.
import { $, fmt, setText } from "./common.js";

const SVG_NS = "http://www.w3.org/2000/svg";
// The overview is drawn at one SVG unit to one CSS pixel, so its 12 px text is 12 px on the
// screen at any width: the racks wrap into rows instead of shrinking (it was about 9 px at
// 1280 px wide when the whole pod was scaled to fit, issue #50).
const X0 = 220; // where the first rack's column starts (the CDU and its trunks sit left of it)
const MIN_COL = 160; // narrowest rack column: its box's longest line at 12 px, and the gaps
const MAX_COL = 200;
const ROW_H = 500; // one row of racks: supply header, riser, box, control and return valves, return header
const LINE = 17;

function svg(tag, attrs, parent, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  parent.appendChild(el);
  return el;
}

/**
 * A two-triangle valve symbol on a vertical pipe at (x, y), with its state written beside it:
 * to its right, or (side "left") to its left, so that a column's two pipes keep their words
 * inside the column.
 */
function valve(parent, x, y, kind, label, side) {
  const g = svg("g", { class: `valve-group ${kind}` }, parent);
  svg("polygon", { class: `valve ${kind === "control" ? "control" : ""}`, points: `${x - 9},${y - 11} ${x + 9},${y - 11} ${x - 9},${y + 11} ${x + 9},${y + 11}` }, g);
  const tx = side === "left" ? x - 14 : x + 14;
  const anchor = side === "left" ? "end" : "start";
  svg("text", { x: tx, y: y - 8, "text-anchor": anchor }, g, label);
  const state = svg("text", { x: tx, y: y + 6, class: "state", "text-anchor": anchor }, g, "—");
  const seen = svg("text", { x: tx, y: y + 20, class: "seen", "text-anchor": anchor }, g, "");
  return { g, symbol: g.firstChild, state, seen };
}

/** How the racks fit the width: as many per row as keep a column at MIN_COL, the rows balanced. */
function overviewGrid(width, n) {
  const room = Math.max(MIN_COL, width - X0 - 10);
  const rows = Math.ceil(n / Math.max(1, Math.floor(room / MIN_COL)));
  const perRow = Math.ceil(n / rows);
  return { rows, perRow, col: Math.min(MAX_COL, Math.floor(room / perRow)) };
}

function buildOverview(view, width) {
  const root = $("#overview");
  root.replaceChildren();
  const n = view.racks.length;
  const { rows, perRow, col } = overviewGrid(width, n);
  const height = rows * ROW_H + 10;
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  root.setAttribute("width", String(width));
  root.setAttribute("height", String(height));
  const supplyX = (x) => x + 30;
  const returnX = (x) => x + col - 40;
  // the CDU: its supply riser and trunk on the right of its box, its return trunk on the left
  const cdu = svg("g", { id: "cdu" }, root);
  const pumps = view.pump.duty === "" ? [] : view.pump.duty.split(" · ");
  const fields = ["pump", ...pumps.map((_, i) => `duty-${i}`), "speed", "dp", "supply", "return", "flow", "level", "loop"];
  const boxH = 30 + fields.length * LINE;
  const boxY = Math.max(60, 250 - boxH / 2);
  svg("path", { class: "pipe supply", d: `M${X0 - 30},${boxY} V40 H${X0 - 10} V${40 + (rows - 1) * ROW_H}` }, root);
  svg("path", { class: "pipe return", d: `M30,${boxY + boxH} V${470 + (rows - 1) * ROW_H}` }, root);
  svg("text", { x: X0, y: 24, class: "title" }, root, "supply header");
  svg("text", { x: 40, y: 492 + (rows - 1) * ROW_H, class: "title" }, root, "return header");
  svg("rect", { class: "box", x: 10, y: boxY, width: X0 - 30, height: boxH, rx: 6 }, cdu);
  svg("text", { x: 20, y: boxY + 20, class: "title" }, cdu, "CDU");
  const cduLines = Object.fromEntries(fields.map((f, i) => [f, svg("text", { x: 20, y: boxY + 40 + i * LINE, "data-field": f }, cdu, "—")]));
  const racks = view.racks.map((r, i) => {
    const row = Math.floor(i / perRow);
    const x = X0 + (i % perRow) * col;
    const y0 = row * ROW_H;
    const lastInRow = Math.min(n, (row + 1) * perRow) - 1 === i;
    const g = svg("g", { "data-rack": r.name }, root);
    // the headers' lengths at this rack (the supply from the trunk or the rack before it, the
    // return back to the rack before it or to the trunk; a row's headers end at its last rack),
    // apart from the rack's own branches, which alone are drawn dry when the rack is isolated
    svg("path", { class: "pipe supply", d: `M${x - 10},${y0 + 40} H${lastInRow ? supplyX(x) : x + col - 10}` }, g);
    svg("path", { class: "pipe return", d: `M${returnX(x)},${y0 + 470} H${i % perRow === 0 ? 30 : returnX(x - col)}` }, g);
    svg("path", { class: "pipe supply", d: `M${supplyX(x)},${y0 + 40} V${y0 + 170}`, "data-pipe": "supply" }, g);
    svg("path", { class: "pipe return", d: `M${returnX(x)},${y0 + 330} V${y0 + 470}`, "data-pipe": "return" }, g);
    const supplyIso = valve(g, supplyX(x), y0 + 100, "iso-supply", "supply iso", "right");
    const ctrl = valve(g, returnX(x), y0 + 365, "control", "valve", "left");
    const returnIso = valve(g, returnX(x), y0 + 425, "iso-return", "return iso", "left");
    const box = svg("rect", { class: "box", x: x + 5, y: y0 + 170, width: col - 10, height: 160, rx: 6 }, g);
    svg("text", { x: x + 13, y: y0 + 190, class: "title" }, g, r.name);
    const lines = Object.fromEntries(["leak", "flow", "supply", "return", "power", "cap", "loop"].map((f, j) => [f, svg("text", { x: x + 13, y: y0 + 210 + j * LINE, "data-field": f }, g, "—")]));
    const tip = svg("title", {}, g, r.name);
    return { g, box, supplyIso, ctrl, returnIso, lines, tip };
  });
  return { cduLines, cduTip: svg("title", {}, cdu, "CDU"), racks };
}

let overview = null;
let overviewKey = "";
/** the view last drawn: drawn again when the page is resized */
let shown = null;

/** The racks' leak state in words that fit their box: a sensor's fault is never worded as a leak. */
const LEAK_SENSOR_WORDS = { "comms fault": "leak: COMMS FAULT", "no reading": "leak: NO READING", "cable fault": "leak: CABLE FAULT", ok: "leak: sensor fault" };
const LEAK_SENSOR_TIPS = {
  "comms fault": "its leak sensor is not being read (the device is silent or erring, or the sample is stale): a comms fault, not a leak",
  "no reading": "its leak sensor's reading arrived unusable: a sensor fault, not a leak",
  "cable fault": "its leak sensor reports a broken sensing cable: a sensor fault, not a leak",
  ok: "a leak sensor fault",
};

export function drawOverview(view) {
  shown = view;
  const sec = $("#overview-section");
  const cs = getComputedStyle(sec);
  const width = Math.floor(sec.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight));
  const key = `${view.racks.map((r) => r.name).join(",")}|${view.pump.duty.split(" · ").length}|${width}`;
  if (overview === null || key !== overviewKey) {
    overview = buildOverview(view, width);
    overviewKey = key;
  }
  const L0 = overview.cduLines;
  setText(L0.pump, view.pump.running ? "pump RUNNING" : "pump STOPPED");
  L0.pump.setAttribute("class", view.pump.running ? "" : "state closed");
  (view.pump.duty === "" ? [] : view.pump.duty.split(" · ")).forEach((d, i) => L0[`duty-${i}`] !== undefined && setText(L0[`duty-${i}`], d));
  setText(L0.speed, fmt(view.pump.speedPct, 0, " % speed"));
  const dpText = fmt(view.pump.dpKpa, 0, " kPa");
  setText(L0.dp, dpText === null ? `dP no reading (sp ${view.pump.setpointKpa})` : `dP ${dpText} (sp ${view.pump.setpointKpa})`);
  const c = view.cdu;
  const put = (el, label, text) => {
    el.textContent = `${label} ${text ?? "no reading"}`;
    el.setAttribute("class", text === null ? "missing" : "");
  };
  put(L0.supply, "supply", fmt(c.supplyTempC, 1, " °C"));
  put(L0.return, "return", fmt(c.returnTempC, 1, " °C"));
  put(L0.flow, "flow", fmt(c.totalFlowLpm, 0, " L/min"));
  put(L0.level, "level", fmt(c.reservoirPct, 0, " %"));
  setText(L0.loop, `loop ${view.pump.loopMode}`);
  overview.cduTip.textContent = `CDU: pump loop ${view.pump.loopMode}${view.pump.hold ? ` (${view.pump.hold})` : ""}`;
  view.racks.forEach((r, i) => {
    const o = overview.racks[i];
    for (const [v, state, seen] of [
      [o.supplyIso, r.supplyIsolation, r.supplyIsolationSeen],
      [o.returnIso, r.returnIsolation, r.returnIsolationSeen],
    ]) {
      v.symbol.setAttribute("class", `valve ${state}`);
      v.state.textContent = state.toUpperCase();
      v.state.setAttribute("class", `state ${state}`);
      // commanded against seen: a valve that is not where it was sent is said so
      const agrees = seen === state;
      v.seen.textContent = seen === null ? "" : agrees ? `seen ${seen}` : `seen ${seen.toUpperCase()}`;
      v.seen.setAttribute("class", seen === null || agrees ? "seen" : "seen mismatch");
    }
    o.g.querySelector('[data-pipe="supply"]').classList.toggle("dry", r.supplyIsolation === "closed");
    o.g.querySelector('[data-pipe="return"]').classList.toggle("dry", r.returnIsolation === "closed");
    o.ctrl.state.textContent = fmt(r.valvePct, 0, " % open") ?? "no command";
    o.ctrl.seen.textContent = r.valvePositionPct === null ? "" : `at ${r.valvePositionPct.toFixed(0)} %`;
    o.box.setAttribute("class", `box leak-${r.leak}`);
    const L = o.lines;
    // Warning is the leak sensor's fault (its link, its reading, its cable), not a leak: an
    // unplugged rack read "LEAK WARNING" (issues #50, #53); the sensor's own word says which
    L.leak.textContent = r.leak === "OK" ? "leak: none" : r.leak === "Warning" ? LEAK_SENSOR_WORDS[r.leakSensor] ?? "leak: sensor fault" : "LEAK";
    L.leak.setAttribute("class", `state ${r.leak}`);
    o.tip.textContent = `${r.name}: ${r.leak === "Warning" ? LEAK_SENSOR_TIPS[r.leakSensor] ?? "a leak sensor fault" : r.leak === "OK" ? "no leak" : "LEAK"}${r.hold ? `; ${r.hold}` : ""}`;
    put(L.flow, "flow", fmt(r.flowLpm, 1, " L/min"));
    put(L.supply, "supply", fmt(r.supplyTempC, 1, " °C"));
    put(L.return, "return", fmt(r.returnTempC, 1, " °C"));
    put(L.power, "power", fmt(r.powerKw, 1, " kW"));
    L.cap.textContent = r.powerOffRequested ? "POWER OFF sent" : `cap ${fmt(r.powerCapKw, 0, " kW") ?? "none"}`;
    L.cap.setAttribute("class", r.powerOffRequested ? "state closed" : "");
    L.loop.textContent = r.isolation === "Normal" ? `loop ${r.loopMode}` : `${r.isolation.toUpperCase()}${r.isolatedByOperator ? " (operator)" : ""}`;
    L.loop.setAttribute("class", r.isolation === "Normal" ? "" : "state closed");
  });
}
// a width the page is resized to redraws the overview in as many rows as it needs
new ResizeObserver(() => {
  if (shown !== null) drawOverview(shown);
}).observe(document.getElementById("overview-section"));
