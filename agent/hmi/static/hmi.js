// The HMI page: one EventSource to /api/live, which the browser reconnects by itself. Every
// view is drawn whole from what the daemon sends (it decodes every status bit into words); the
// page only lays it out. With no view for STALE_MS, or while disconnected, the page says STALE
// and greys out: a technician must never read old values as live.
const STALE_MS = 2000;
const SVG_NS = "http://www.w3.org/2000/svg";
// The overview is drawn at one SVG unit to one CSS pixel, so its 12 px text is 12 px on the
// screen at any width: the racks wrap into rows instead of shrinking (it was about 9 px at
// 1280 px wide when the whole pod was scaled to fit, issue #50).
const X0 = 220; // where the first rack's column starts (the CDU and its trunks sit left of it)
const MIN_COL = 160; // narrowest rack column: its box's longest line at 12 px, and the gaps
const MAX_COL = 200;
const ROW_H = 500; // one row of racks: supply header, riser, box, control and return valves, return header
const LINE = 17;

let lastViewAt = -Infinity;
let overviewKey = "";
/** the logged-in session (user, roles, csrf, actions, racks, loops, limits), or null */
let session = null;
let lastView = null;
let alarmsDrawn = "";

const $ = (sel) => document.querySelector(sel);

function fmt(x, digits, unit) {
  return x === null || x === undefined ? null : `${x.toFixed(digits)}${unit}`;
}

/** Sets an SVG or HTML text node to a value in words; a missing reading says so. */
function setText(el, text) {
  el.textContent = text ?? "no reading";
  el.classList.toggle("missing", text === null || text === undefined);
}

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

/** The racks' leak state in words that fit their box: a sensor's fault is never worded as a leak. */
const LEAK_SENSOR_WORDS = { "comms fault": "leak: COMMS FAULT", "no reading": "leak: NO READING", "cable fault": "leak: CABLE FAULT", ok: "leak: sensor fault" };
const LEAK_SENSOR_TIPS = {
  "comms fault": "its leak sensor is not being read (the device is silent or erring, or the sample is stale): a comms fault, not a leak",
  "no reading": "its leak sensor's reading arrived unusable: a sensor fault, not a leak",
  "cable fault": "its leak sensor reports a broken sensing cable: a sensor fault, not a leak",
  ok: "a leak sensor fault",
};

function drawOverview(view) {
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
  if (lastView !== null) drawOverview(lastView);
}).observe(document.getElementById("overview-section"));

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}

const can = (command) => session !== null && session.actions.includes(command);

function button(td, label, command, params) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.dataset.command = command;
  b.dataset.params = JSON.stringify(params);
  td.appendChild(b);
}

function drawAlarms(view) {
  // rows are rebuilt only when what they show changes: a click must not land on a row being replaced
  const drawn = JSON.stringify([view.alarms, session?.user ?? null, session?.actions ?? []]);
  if (drawn === alarmsDrawn) return;
  alarmsDrawn = drawn;
  const body = $("#alarms tbody");
  body.replaceChildren();
  $("#alarm-count").textContent = `(${view.alarms.length})`;
  for (const a of view.alarms) {
    const tr = document.createElement("tr");
    tr.className = a.severity;
    tr.dataset.alarm = a.id;
    cell(tr, a.severity);
    cell(tr, new Date(a.raisedAt).toLocaleTimeString());
    cell(tr, a.source);
    cell(tr, a.message, "message");
    const state = [a.acknowledged ? "acknowledged" : "unacknowledged", a.latched ? "latched" : "", a.conditionActive ? "" : "condition cleared", a.suppressed ? "suppressed (maintenance)" : ""];
    cell(tr, state.filter(Boolean).join(", "));
    const act = document.createElement("td");
    if (!a.acknowledged && can("ack-alarm")) button(act, "acknowledge", "ack-alarm", { id: a.id });
    if (a.id.startsWith("leak:") && can("reset-leak")) button(act, "reset leak", "reset-leak", { rack: a.id.slice(5) });
    tr.appendChild(act);
    body.appendChild(tr);
  }
}

function leaseWords(l, what) {
  if (l === null) return null;
  const s = Math.round(l.expiresInMs / 1000);
  return `${what} ${l.value} for ${s >= 120 ? `${Math.round(s / 60)} min` : `${s} s`} more (${l.by})`;
}

function drawLoops(view) {
  const body = $("#loops tbody");
  body.replaceChildren();
  for (const l of view.loops) {
    const tr = document.createElement("tr");
    tr.dataset.loop = l.name;
    const range = (r, unit) => `${r.min}–${r.max}${unit}`;
    cell(tr, l.name);
    cell(tr, `${l.sp.toFixed(1)} ${l.unit} (${range(l.spRange, "")})`);
    cell(tr, fmt(l.pv, 1, ` ${l.unit}`) ?? "no reading");
    cell(tr, l.out === null ? "no command" : `${l.out.toFixed(0)} % (${range(l.outRange, " %")})`);
    cell(tr, l.mode);
    cell(tr, l.hold || "—");
    cell(tr, [leaseWords(l.setpointLease, "setpoint"), leaseWords(l.override, "Override")].filter(Boolean).join("; ") || "—");
    body.appendChild(tr);
  }
}

function draw(view) {
  lastView = view;
  $("#pod-id").textContent = `${view.pod.site} / ${view.pod.pod}`;
  const mode = $("#mode");
  mode.textContent = `mode ${view.mode}`;
  mode.dataset.state = view.mode;
  $("#maintenance").hidden = !view.maintenance;
  $("#power").textContent = `power ${view.power.drawKw.toFixed(0)} kW of ${view.power.budgetKw === null ? "—" : view.power.budgetKw.toFixed(0)} kW budget`;
  drawOverview(view);
  drawAlarms(view);
  drawLoops(view);
  const c = view.control;
  const us = (x) => (x === null ? "—" : `${x.toFixed(0)} µs`);
  $("#control").textContent = `tick lateness p99 ${us(c.p99Us)} (recent ${us(c.recentP99Us)}), max ${us(c.maxUs)}; overruns ${c.overruns} (recent ${c.recentOverruns}); ticks ${c.ticks}; SCHED_FIFO ${c.schedFifo}; control loop ${view.healthy ? "healthy" : "NOT HEALTHY"}`;
  $("#identity").textContent = `podwarden ${view.pod.version} · config ${view.pod.configHash.slice(0, 12)}`;
  $("#updated").textContent = new Date(view.at).toLocaleTimeString();
}

function setLive(live) {
  document.body.classList.toggle("stale", !live);
  const link = $("#link");
  link.textContent = live ? "live" : "STALE";
  link.dataset.state = live ? "live" : "stale";
}

function say(text, ok) {
  const m = $("#message");
  m.hidden = false;
  m.textContent = text;
  m.className = ok ? "ok" : "error";
}

function fill(select, names) {
  if (select.dataset.names === names.join()) return;
  select.dataset.names = names.join();
  select.replaceChildren(...names.map((n) => Object.assign(document.createElement("option"), { value: n, textContent: n })));
}

function setSession(s) {
  session = s !== null && s.user !== null ? s : null;
  $("#login").hidden = session !== null || s?.loginPossible === false;
  $("#whoami").hidden = session === null;
  $("#operate-section").hidden = session === null;
  if (session !== null) {
    $("#user").textContent = `${session.user} (${session.roles.join(", ")})`;
    fill($("#rack-select"), session.racks);
    const loops = session.loops.map((l) => l.name);
    fill($("#loop-select"), loops);
    fill($("#mode-loop-select"), loops);
    for (const b of document.querySelectorAll("#rack-form button")) b.hidden = !can(b.dataset.command);
    $("#setpoint-form").hidden = !can("setpoint");
    $("#mode-form").hidden = !can("mode");
    $("#record-form").hidden = !can("record");
    $("#tune-form").hidden = !can("tune");
    fill($("#tune-loop-select"), loops);
    const l = session.limits;
    $("#envelope").textContent = `envelope: return temperature ${l.returnTempC.min}–${l.returnTempC.max} °C, pump dP ${l.dpKpa.min}–${l.dpKpa.max} kPa, setpoint lease at most ${l.maxLeaseS} s, rack valve ${l.rackOutputPct.min}–${l.rackOutputPct.max} %, pump ${l.pumpOutputPct.min}–${l.pumpOutputPct.max} %${session.loops.some((x) => x.kind === "supply") ? `, supply temperature ${l.supplyTempC.min}–${l.supplyTempC.max} °C, primary valve ${l.supplyOutputPct.min}–${l.supplyOutputPct.max} %` : ""}`;
  }
  if (lastView !== null) drawAlarms(lastView);
}

async function post(path, body) {
  const headers = { "content-type": "application/json" };
  if (session !== null) headers["x-csrf-token"] = session.csrf;
  let r;
  try {
    r = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin" });
  } catch {
    return { status: 0, answer: { error: "no answer from the daemon" } };
  }
  let answer = {};
  try {
    answer = await r.json();
  } catch {
    // no JSON body: the status says enough
  }
  return { status: r.status, answer };
}

async function act(command, params) {
  const { status, answer } = await post("api/action", { command, params });
  if (status === 401) setSession(null);
  if (status === 200) say(`${command}: done`, true);
  else say(`${command}: refused: ${answer.error ?? `HTTP ${status}`}`, false);
  return status === 200 ? answer.data : null;
}

// Relay autotune and gains: the tuning's state and proposals, or the loop's gains, in words
function tuneWords(d) {
  if (d === null || d === undefined) return "";
  const g = d.applied !== undefined && d.config === undefined ? d.applied : null;
  if (g !== null) return `applied kp ${g.kp.toPrecision(3)} ki ${g.ki.toPrecision(3)} (${g.rule})`;
  if (d.config !== undefined) return `config kp ${d.config.kp} ki ${d.config.ki}; ${d.applied === null ? "running on them" : `running on kp ${d.applied.kp.toPrecision(3)} ki ${d.applied.ki.toPrecision(3)} (${d.applied.rule})`}`;
  const t = d.tuning;
  if (t === null) return "not tuned since the agent started";
  const lines = [`${t.loop}: ${t.state}${t.reason ? ` (${t.reason})` : ""}; ${t.switches} of ${t.switchesNeeded} relay switches`];
  const r = t.result;
  if (r) {
    lines.push(`Ku ${r.ku.toPrecision(3)}, Pu ${r.puS.toPrecision(3)} s${r.fopdt ? `; FOPDT gain ${r.fopdt.gain.toPrecision(3)}, lag ${r.fopdt.tauS.toPrecision(3)} s, dead time ${r.fopdt.deadTimeS.toPrecision(3)} s` : ""}`);
    for (const p of r.proposals) lines.push(`${p.rule}: kp ${p.kp.toPrecision(3)} ki ${p.ki.toPrecision(3)}${p.margins ? `, GM ${p.margins.gain.toFixed(2)}, PM ${p.margins.phaseDeg.toFixed(0)}°` : ""}${p.rule === r.recommended ? " (recommended)" : ""}`);
  }
  return lines.join("\n");
}
// while a tuning runs the form follows it, every 2 s, until it ends or another loop is chosen
let tuneFollow = null;
async function tuneAct(command, params) {
  const loop = $("#tune-loop-select").value;
  const data = await act(command, { loop, ...params });
  if (data === null) return;
  $("#tune-result").textContent = tuneWords(data);
  clearTimeout(tuneFollow);
  const state = data.tuning?.state;
  if (state === "starting" || state === "noise" || state === "relay") {
    tuneFollow = setTimeout(() => {
      if ($("#tune-loop-select").value === loop && session !== null) void tuneAct("tune", { action: "status" });
    }, 2000);
  }
}
$("#tune-start").addEventListener("click", () => void tuneAct("tune", { action: "start" }));
$("#tune-abort").addEventListener("click", () => void tuneAct("tune", { action: "abort" }));
$("#tune-status").addEventListener("click", () => void tuneAct("tune", { action: "status" }));
$("#gains-apply").addEventListener("click", () => void tuneAct("gains", { rule: $("#tune-rule").value }));
$("#gains-revert").addEventListener("click", () => void tuneAct("gains", { revert: true }));

$("#login").addEventListener("submit", (e) => {
  e.preventDefault();
  void post("api/login", { name: $("#login-name").value, password: $("#login-password").value }).then(({ status, answer }) => {
    $("#login-password").value = "";
    if (status === 200) {
      setSession(answer);
      say(`logged in as ${answer.user}`, true);
    } else say(`login refused: ${answer.error ?? `HTTP ${status}`}`, false);
  });
});
$("#logout").addEventListener("click", () => {
  void post("api/logout", {}).then(() => {
    setSession({ user: null });
    say("logged out", true);
  });
});
document.addEventListener("click", (e) => {
  const b = e.target.closest?.("button[data-command]");
  if (b === null || b === undefined || b.closest("#rack-form") === null && b.dataset.params === undefined) return;
  const params = b.dataset.params !== undefined ? JSON.parse(b.dataset.params) : { rack: $("#rack-select").value };
  void act(b.dataset.command, params);
});
$("#setpoint-form").addEventListener("submit", (e) => {
  e.preventDefault();
  void act("setpoint", { loop: $("#loop-select").value, value: Number($("#sp-value").value), leaseS: Number($("#sp-lease").value) });
});
$("#mode-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const mode = $("#mode-select").value;
  const out = $("#mode-output").value;
  void act("mode", { loop: $("#mode-loop-select").value, mode, ...(mode === "Manual" ? { outputPct: Number(out) } : {}) });
});
// Flight recordings: the newest first, each a CSV download
async function drawRecordings() {
  let list;
  try {
    const r = await fetch("api/recordings");
    if (!r.ok) return;
    list = (await r.json()).recordings;
  } catch {
    return;
  }
  const ul = $("#recordings");
  ul.replaceChildren();
  if (list.length === 0) {
    const li = document.createElement("li");
    li.textContent = "none yet (a trip, or an operator's request, writes one)";
    ul.appendChild(li);
  }
  for (const x of list.slice(0, 20)) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `api/recording.csv?id=${encodeURIComponent(x.id)}`;
    a.textContent = x.createdAt;
    li.append(a, ` ${x.triggers.join(", ")}: ${x.ticks} ticks${x.complete ? "" : " (incomplete)"}`);
    ul.appendChild(li);
  }
}
void drawRecordings();
setInterval(() => void drawRecordings(), 10_000);
// Trends: the daemon keeps the last minutes of every series; the page asks for the chosen ones
// when the choice changes and every TREND_REFRESH_MS after, keeping the zoom the user set.
const TREND_REFRESH_MS = 5000;
const COLOURS = ["#2b5d8a", "#b00020", "#1b7f3b", "#b26a00", "#6a3d9a", "#00838f", "#5d4037", "#c2185b"];
let chart = null;
let chartIds = "";

function chosenSeries() {
  return [...$("#trend-select").selectedOptions].map((o) => o.value).slice(0, 8);
}

async function drawTrend() {
  const ids = chosenSeries();
  const el = $("#trend-chart");
  if (ids.length === 0) {
    chart?.destroy();
    chart = null;
    chartIds = "";
    return;
  }
  let w;
  try {
    const r = await fetch(`api/trend?${ids.map((id) => `series=${encodeURIComponent(id)}`).join("&")}`);
    if (!r.ok) return;
    w = await r.json();
  } catch {
    return; // the daemon is not answering: the page already says STALE
  }
  const data = [w.t.map((t) => t / 1000), ...ids.map((id) => w.values[id])];
  if (chart !== null && chartIds === ids.join()) {
    chart.setData(data, false);
    return;
  }
  chart?.destroy();
  chartIds = ids.join();
  const unitOf = Object.fromEntries([...$("#trend-select").options].map((o) => [o.value, o.dataset.unit ?? ""]));
  // one axis per unit, each labelled with it: °C and % on one unitless axis read as one scale
  // (issue #50); the first on the left, the next on the right, and so on
  const units = [...new Set(ids.map((id) => unitOf[id]))];
  const yAxes = units.map((u, i) => ({ scale: u, label: u === "" ? "(no unit)" : u, side: i % 2 === 0 ? 3 : 1, size: 60, gap: 4, font: AXIS_FONT, labelFont: AXIS_FONT, labelSize: 20, grid: { show: i === 0 } }));
  el.dataset.axes = units.map((u) => (u === "" ? "(no unit)" : u)).join(" | ");
  chart = new uPlot(
    {
      width: Math.max(320, el.clientWidth),
      height: 300,
      scales: Object.fromEntries(units.map((u) => [u, { auto: true }])),
      series: [{}, ...ids.map((id, i) => ({ label: `${id}${unitOf[id] ? ` (${unitOf[id]})` : ""}`, scale: unitOf[id], stroke: COLOURS[i], width: 1.5, spanGaps: false }))],
      axes: [{ space: X_LABEL_SPACE, font: AXIS_FONT, values: timeLabels }, ...yAxes],
    },
    data,
    el,
  );
}

// The time axis: 24-hour HH:MM:SS, never less than X_LABEL_SPACE px apart (uPlot's default 50 px
// let its wider labels run into each other, issue #50). The gap it chose is on the chart's
// element for the browser test to hold against the labels' width.
const AXIS_FONT = "12px system-ui, sans-serif";
const X_LABEL_SPACE = 90;
const two = (x) => String(x).padStart(2, "0");
function timeLabels(u, splits) {
  const xs = splits.map((v) => u.valToPos(v, "x"));
  let gap = Infinity;
  for (let i = 1; i < xs.length; i++) gap = Math.min(gap, xs[i] - xs[i - 1]);
  u.root.parentElement.dataset.xLabelGapPx = String(Math.round(gap));
  return splits.map((v) => {
    const d = new Date(v * 1000);
    return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  });
}

new ResizeObserver(() => {
  const el = $("#trend-chart");
  if (chart !== null && Math.abs(chart.width - Math.max(320, el.clientWidth)) > 1) chart.setSize({ width: Math.max(320, el.clientWidth), height: 300 });
}).observe(document.getElementById("trends-section"));

void fetch("api/trends")
  .then((r) => r.json())
  .catch(() => ({ minutes: 0, series: [] }))
  .then((list) => {
    $("#trend-hint").textContent = `(the last ${list.minutes} minutes, a sample a second; drag to zoom, double-click to zoom out; a gap is a time with no good value)`;
    const select = $("#trend-select");
    select.replaceChildren(...list.series.map((s) => Object.assign(document.createElement("option"), { value: s.id, textContent: s.unit ? `${s.id} (${s.unit})` : s.id })));
    for (const [i, s] of list.series.entries()) select.options[i].dataset.unit = s.unit;
    select.addEventListener("change", () => void drawTrend());
    setInterval(() => void drawTrend(), TREND_REFRESH_MS);
  });

// History: the daemon sends the last events when the page connects and each new one as it
// happens; the page keeps up to HISTORY_MAX and filters them here.
const HISTORY_MAX = 1000;
const HISTORY_SHOWN = 200;
let history = [];

function drawHistory() {
  const type = $("#history-type").value;
  const text = $("#history-text").value.toLowerCase();
  const shown = [];
  for (let i = history.length - 1; i >= 0 && shown.length < HISTORY_SHOWN; i--) {
    const e = history[i];
    if (!e.type.startsWith(type)) continue;
    if (text !== "" && !e.text.toLowerCase().includes(text) && !e.source.toLowerCase().includes(text)) continue;
    shown.push(e);
  }
  $("#history tbody").replaceChildren(
    ...shown.map((e) => {
      const tr = document.createElement("tr");
      tr.dataset.type = e.type;
      cell(tr, new Date(e.at).toLocaleTimeString());
      cell(tr, e.type);
      cell(tr, e.source);
      cell(tr, e.text, "message");
      return tr;
    }),
  );
}
$("#history-type").addEventListener("change", drawHistory);
$("#history-text").addEventListener("input", drawHistory);
$("#history-filter").addEventListener("submit", (e) => e.preventDefault());

function drawHealth(h) {
  const lat = $("#lateness tbody");
  const most = Math.max(1, ...h.control.lateness.map((b) => b.count));
  lat.replaceChildren(
    ...h.control.lateness.map((b) => {
      const tr = document.createElement("tr");
      cell(tr, b.toUs === null ? `over ${b.fromUs / 1000} ms` : b.toUs <= 1000 ? `${b.fromUs}–${b.toUs} µs` : `${b.fromUs / 1000}–${b.toUs / 1000} ms`);
      cell(tr, String(b.count));
      const bar = document.createElement("td");
      bar.className = "bar";
      const span = document.createElement("span");
      span.style.width = `${(100 * b.count) / most}%`;
      bar.appendChild(span);
      tr.appendChild(bar);
      return tr;
    }),
  );
  const u = h.uplink;
  $("#uplink").textContent =
    u === null
      ? "uplink: none configured"
      : `uplink: ${u.connected ? "connected" : "NOT CONNECTED"}; spool ${u.spoolDepth} messages (${(u.spoolBytes / 1024).toFixed(0)} KiB); last PUBACK ${u.lastAckAt === null ? "never" : new Date(u.lastAckAt).toLocaleTimeString()}${u.ackP99Ms === null ? "" : `, p99 ${u.ackP99Ms.toFixed(1)} ms`}; connects ${u.connects}${u.broker === null ? "" : `; broker ${u.broker}`}${u.brokerSwitches > 0 ? ` (${u.brokerSwitches} broker switches)` : ""}`;
  const dev = $("#devices tbody");
  dev.replaceChildren(
    ...h.devices.map((d) => {
      const tr = document.createElement("tr");
      tr.dataset.device = d.name;
      cell(tr, d.name);
      cell(tr, d.connected ? "connected" : "DISCONNECTED", d.connected ? "" : "bad");
      cell(tr, d.trips > 0 ? `${d.breaker} (${d.trips} trips)` : d.breaker, d.breaker === "closed" ? "" : "bad");
      cell(tr, d.requestsPerS === null ? "—" : d.requestsPerS.toFixed(0));
      cell(tr, d.rttMs.p50 === null ? "—" : `${d.rttMs.p50.toFixed(2)} / ${d.rttMs.p99.toFixed(2)} ms`);
      const f = d.failures;
      cell(tr, `${f.timeouts} timeouts, ${f.exceptions} exceptions, ${f.corrupt} corrupt, ${f.disconnected} disconnected`);
      cell(tr, d.lastError === null ? "none" : `${new Date(d.lastError.at).toLocaleTimeString()} ${d.lastError.kind}: ${d.lastError.message}`, "message");
      return tr;
    }),
  );
  $("#build").textContent = `podwarden ${h.build.version} on Node.js ${h.build.node}; config sha256 ${h.build.configHash}`;
}


void fetch("api/session", { credentials: "same-origin" })
  .then((r) => r.json())
  .then(setSession, () => setSession(null));

const source = new EventSource("api/live");
source.addEventListener("health", (e) => drawHealth(JSON.parse(e.data)));
source.addEventListener("events", (e) => {
  // a (re)connection: the daemon's history replaces what the page had
  history = JSON.parse(e.data);
  drawHistory();
});
source.addEventListener("event", (e) => {
  history.push(JSON.parse(e.data));
  if (history.length > HISTORY_MAX) history.shift();
  drawHistory();
});
source.addEventListener("state", (e) => {
  lastViewAt = performance.now();
  draw(JSON.parse(e.data));
  setLive(true);
});
setInterval(() => {
  // a stream ends every hmi.livePageS and the browser connects again at once: that second
  // CONNECTING is not staleness, only views missing for STALE_MS are (or the source given up)
  if (source.readyState === EventSource.CLOSED || performance.now() - lastViewAt > STALE_MS) setLive(false);
}, 250);
