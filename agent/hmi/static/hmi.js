// The HMI page: one EventSource to /api/live, which the browser reconnects by itself. Every
// view is drawn whole from what the daemon sends (it decodes every status bit into words); the
// page only lays it out. With no view for STALE_MS, or while disconnected, the page says STALE
// and greys out: a technician must never read old values as live.
import { $, fmt } from "./common.js";
import { drawOverview } from "./overview.js";
import { startTrends } from "./trends.js";

const STALE_MS = 2000;

let lastViewAt = -Infinity;
/** the logged-in session (user, roles, csrf, actions, racks, loops, limits), or null */
let session = null;
let lastView = null;
let alarmsDrawn = "";

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
startTrends();

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
