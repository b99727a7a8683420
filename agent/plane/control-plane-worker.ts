// The control plane's thread: the pod's agent (field I/O, the pod wiring, the actuator pass, the
// supervisor, the operator's decisions, the leak thread and the control worker it starts) runs
// here, away from the main thread, where HTTP, MQTT, scrypt, YAML and the logs run. It talks to
// the service plane only by messages, each direction bounded (queue-gauge.ts): a service plane
// that stops reading costs this thread dropped views and events, counted, never a wait.
// At nice -10 where permitted, not at SCHED_FIFO: it comes before the service plane, and it does
// JavaScript work in bursts that at FIFO would use up the kernel's real-time share and throttle
// the control worker with it (agent/control/sched-fifo.ts, niceThread).
import { parentPort, workerData } from "node:worker_threads";
import type { DestinationStream } from "pino";
import { monoMs } from "../../lib/clock.js";
import { Agent } from "../agent.js";
import { reloadAgent, startAgent, type Hosted } from "./agent-host.js";
import { niceThread } from "../control/sched-fifo.js";
import { Logs } from "../log.js";
import type { AgentEvent } from "../pod-api.js";
import { QueueGauge } from "./queue-gauge.js";
import { QUEUE_BOUNDS, QUEUES, type ControlPlaneInput, type PodView, type Request, type ToControl, type ToService } from "./messages.js";

const input = workerData as ControlPlaneInput;
const port = parentPort!;
const toService = new QueueGauge(input.gauges, QUEUES.toService, QUEUE_BOUNDS.toService);
const logQueue = new QueueGauge(input.gauges, QUEUES.logs, QUEUE_BOUNDS.logBytes);
const toControl = new QueueGauge(input.gauges, QUEUES.toControl, QUEUE_BOUNDS.toControl);
const dropped = { events: 0, logLines: 0, views: 0 };

/** Posts what must arrive (replies, the start); counted, never refused: the service plane asked for it. */
const post = (m: ToService): void => {
  toService.force();
  port.postMessage(m);
};

/**
 * The logs of this thread: pino writes into this stream, which sends its text to the service
 * plane every 20 ms (or at 64 KB) to be written there. Past QUEUE_BOUNDS.logBytes in flight, lines
 * are dropped and counted, and the count is said in a line of its own once there is room.
 */
class LogChannel implements DestinationStream {
  private pending: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private lost = 0;

  write(line: string): void {
    this.pending.push(line);
    this.bytes += Buffer.byteLength(line);
    if (this.bytes >= 64 * 1024) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 20);
  }

  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return;
    if (this.lost > 0 && logQueue.depth() < QUEUE_BOUNDS.logBytes / 2) {
      this.pending.unshift(`${JSON.stringify({ level: 40, time: new Date().toISOString(), module: "control-plane", msg: "log lines dropped: the service plane was not writing them", dropped: this.lost })}\n`);
      this.lost = 0;
    }
    const text = this.pending.join("");
    const bytes = Buffer.byteLength(text);
    const lines = this.pending.length;
    this.pending = [];
    this.bytes = 0;
    if (!logQueue.admit(bytes)) {
      this.lost += lines;
      dropped.logLines += lines;
      return;
    }
    port.postMessage({ t: "log", text, bytes } satisfies ToService);
  }
}

const channel = new LogChannel();
const logs = new Logs(input.loaded.config.log, { site: input.loaded.config.site, pod: input.loaded.config.pod }, channel);
const log = logs.module("control-plane");
const hosted: Hosted = { agent: new Agent(input.loaded, logs, input.carried), running: input.loaded };
let unsubscribe: () => void = () => undefined;
let stopped = false;

function view(): PodView {
  const snapshot = hosted.agent.snapshot();
  const c = hosted.agent.controlStats();
  return {
    atMs: monoMs(),
    mode: hosted.agent.mode(),
    healthy: hosted.agent.healthy(),
    status: snapshot.status as PodView["status"],
    snapshot,
    alarms: snapshot.alarms as PodView["alarms"],
    points: hosted.agent.fieldPoints(),
    powerBudgetKw: hosted.agent.powerBudgetKw(),
    control: { ...c, lateness: c.lateness.counts, actuatorPassLateness: c.actuatorPassLateness.counts },
    modbus: hosted.agent.modbusStats(),
    ingest: hosted.agent.ingestStats(),
    redfish: hosted.agent.redfishStats(),
    stroke: hosted.agent.strokeStatus(),
    devices: hosted.agent.deviceHealth(),
    ...(hosted.agent.recorder.dir === undefined ? {} : { recordingsDir: hosted.agent.recorder.dir }),
    dropped: { ...dropped },
  };
}

/** The periodic view: skipped while the service plane has not read the last ones (it would only read a stale one). */
function pushView(): void {
  if (stopped) return;
  if (toService.depth() > 2 || !toService.admit()) {
    dropped.views++;
    return;
  }
  port.postMessage({ t: "view", view: view() } satisfies ToService);
}

/** Events wait for the end of this turn, at most this many, then go out together. */
const MAX_EVENTS_PER_TURN = 1024;
let turnEvents: AgentEvent[] = [];

/**
 * Each event goes out at the end of the turn that raised it, with the others of that turn and a
 * view taken after them: the uplink publishes its retained state on a mode or maintenance event,
 * reading the view, which must already show it (the demo's maintenance test failed without this).
 */
function onEvent(e: AgentEvent): void {
  if (turnEvents.length >= MAX_EVENTS_PER_TURN) {
    dropped.events++;
    return;
  }
  if (turnEvents.length === 0) setImmediate(sendEvents);
  turnEvents.push(e);
}

function sendEvents(): void {
  const es = turnEvents;
  turnEvents = [];
  if (!toService.admit()) {
    dropped.events += es.length;
    return;
  }
  port.postMessage({ t: "events", es, view: view() } satisfies ToService);
}

function follow(a: Agent): void {
  unsubscribe();
  unsubscribe = a.onEvent(onEvent);
}

async function carryOut(req: Request): Promise<unknown> {
  switch (req.op) {
    case "execute":
      return await hosted.agent.execute(req.body, req.by);
    case "reset-leak":
      return await hosted.agent.commander.resetLeak(req.rack);
    case "record":
      return hosted.agent.commander.recordNow(req.by);
    case "scan":
      return await hosted.agent.field.scanBus(req.bus, req.o);
    case "reload":
      return await reloadAgent(hosted, req.loaded, logs, log, follow);
    case "stop":
      await hosted.agent.stop({ driveSafe: req.driveSafe, reason: req.reason, timeoutMs: req.timeoutMs });
      stopped = true;
      return null;
  }
}

port.on("message", (m: ToControl) => {
  toControl.taken();
  if (m.t === "audit") hosted.agent.audit(m.record);
  else if (m.t === "problem") {
    if (m.report === null) hosted.agent.resolveProblem(m.id);
    else hosted.agent.reportProblem(m.id, m.report);
  } else {
    // the log lines a request wrote go out before its reply: a stop's last lines are not lost
    // when the service plane ends the thread on the reply
    carryOut(m.req).then(
      (value) => {
        channel.flush();
        post({ t: "reply", id: m.id, ok: true, value, view: view() });
      },
      (err: Error) => {
        channel.flush();
        post({ t: "reply", id: m.id, ok: false, error: err.message, view: view() });
      },
    );
  }
});

async function main(): Promise<void> {
  if (input.nice !== null) {
    const why = niceThread(input.nice);
    if (why !== null) log.warn(`control plane: ${why}`);
  }
  follow(hosted.agent);
  try {
    await startAgent(hosted.agent);
  } catch (err) {
    // its stack in the log, its words in the daemon's one line
    log.error({ err }, "the pod's control did not start");
    channel.flush();
    post({ t: "failed", error: (err as Error).message });
    return;
  }
  post({ t: "started", view: view() });
  // the service plane ends this thread once its stop is answered
  setInterval(pushView, input.viewMs);
}

void main();
