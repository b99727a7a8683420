// The HMI's trends: up to 8 series the daemon keeps, drawn with uPlot (a global from the page's
// own copy), one Y axis per unit.
import { $ } from "./common.js";

// The daemon keeps the last minutes of every series; the page asks for the chosen ones
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

/** Lists the series the daemon keeps in the picker, and follows the choice and the page's width. */
export function startTrends() {
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
}
