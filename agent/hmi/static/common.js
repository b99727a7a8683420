// The HMI page's small helpers, shared by its modules (hmi.js, overview.js, trends.js).
export const $ = (sel) => document.querySelector(sel);

export function fmt(x, digits, unit) {
  return x === null || x === undefined ? null : `${x.toFixed(digits)}${unit}`;
}

/** Sets an SVG or HTML text node to a value in words; a missing reading says so. */
export function setText(el, text) {
  el.textContent = text ?? "no reading";
  el.classList.toggle("missing", text === null || text === undefined);
}
