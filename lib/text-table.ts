// A table a person reads at a terminal: columns left-aligned to their widest cell, two spaces
// apart, no trailing blanks. `podwarden io` and `podwarden scan` print theirs with it.
export function textTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((c) => c[i].length)));
  const line = (c: readonly string[]): string => c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(width[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}
