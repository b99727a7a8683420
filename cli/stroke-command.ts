// `podwarden stroke <rack> --valve supply|return`, `podwarden stroke --status`, `podwarden stroke
// --abort`: an engineer's partial-stroke test of an isolation valve on the controller, through
// the daemon's admin socket (docs/engineering.md, Actuator health). A test is followed to its end
// (seconds); Ctrl-C while it runs aborts it, and its close is released at once.
import { join } from "node:path";
import { adminRequest } from "../agent/ops/admin-socket.js";
import type { StrokeResult } from "../agent/health/isolation-stroke.js";
import type { StrokeStatus } from "../agent/health/isolation-strokes.js";

export interface StrokeArgs {
  stateDir: string;
  log: (line: string) => void;
  action: "start" | "status" | "abort";
  rack?: string;
  valve?: string;
  /** how often a running test is read while following it, ms */
  pollMs?: number;
}

/** A test in one line: its verdict and figures. */
export function strokeLine(s: StrokeResult): string {
  const figures = [
    s.breakawayMs === undefined ? null : `left its open limit ${s.breakawayMs} ms after the close command`,
    s.heldMs === undefined ? null : `close held ${s.heldMs} ms`,
    s.returnMs === undefined ? null : `back at its open limit ${s.returnMs} ms after the open command`,
  ].filter((x) => x !== null);
  return `${s.rack} ${s.valve}: ${s.state}${s.reason === undefined ? "" : ` (${s.reason})`}${figures.length === 0 ? "" : `; ${figures.join(", ")}`}; started ${s.startedAt} by ${s.by}`;
}

async function call(a: StrokeArgs, query: URLSearchParams): Promise<StrokeStatus | StrokeResult> {
  const r = await adminRequest(join(a.stateDir, "admin.sock"), "POST", `/stroke?${query.toString()}`);
  if (r.status !== 200) throw new Error(typeof r.body.error === "string" ? r.body.error : `the daemon answered ${r.status}`);
  return r.body.stroke as StrokeResult;
}

const status = async (a: StrokeArgs): Promise<StrokeStatus> =>
  (await call(a, new URLSearchParams({ action: "status" }))) as StrokeStatus;

export async function strokeCommand(a: StrokeArgs): Promise<number> {
  if (a.action === "status") {
    const s = await status(a);
    if (s.running !== null) a.log(`running: ${strokeLine(s.running)}`);
    if (s.recent !== null && s.recent.state === "aborted") a.log(`last aborted: ${strokeLine(s.recent)}`);
    if (s.last.length === 0) a.log("no isolation valve tested yet");
    for (const r of s.last) a.log(strokeLine(r));
    return 0;
  }
  if (a.action === "abort") {
    a.log(strokeLine((await call(a, new URLSearchParams({ action: "abort" }))) as StrokeResult));
    return 0;
  }
  const started = (await call(a, new URLSearchParams({ action: "start", rack: a.rack ?? "", valve: a.valve ?? "" }))) as StrokeResult;
  a.log(`${started.rack} ${started.valve}: partial-stroke test started; Ctrl-C aborts it`);
  let aborting = false;
  const onInt = (): void => {
    aborting = true;
    void call(a, new URLSearchParams({ action: "abort" })).catch(() => undefined);
  };
  process.on("SIGINT", onInt);
  try {
    for (;;) {
      await new Promise((r) => setTimeout(r, a.pollMs ?? 200));
      const s = await status(a);
      if (s.running !== null) continue;
      const done = s.recent !== null && s.recent.rack === started.rack && s.recent.valve === started.valve && s.recent.startedAt === started.startedAt ? s.recent : null;
      if (done === null) {
        a.log(`${started.rack} ${started.valve}: ended, but another test has ended since (the daemon's log says how this one did)`);
        return 1;
      }
      a.log(strokeLine(done));
      return done.state === "passed" && !aborting ? 0 : 1;
    }
  } finally {
    process.off("SIGINT", onInt);
  }
}
