// The daemon's node flags live in one place, the CLI's shebang line; the systemd unit and the
// benchmarks that launch the daemon are held to the same list by reading it from there.

/** The flags of a `#!/usr/bin/env -S node <flags...>` first line. Throws if the line is not of that form. */
export function shebangNodeFlags(source: string): string[] {
  const first = source.slice(0, source.indexOf("\n"));
  const m = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)$/.exec(first);
  if (m === null) throw new Error(`not a "#!/usr/bin/env -S node <flags>" line: ${first}`);
  return m[1].split(" ").filter((f) => f !== "");
}
