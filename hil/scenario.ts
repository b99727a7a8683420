// HIL scenario files: the simulator's timeline of faults and loads (sim/scenario.ts), with what
// must happen. YAML, checked against a JSON Schema (docs/hil.md lists every key):
//
//   name: leak-rack-3
//   description: a leak on rack-3 is isolated at the device; the other racks keep cooling
//   seed: 7
//   duration: 60s
//   steps:
//     - { at: 10s, leak: rack-3 }
//   expect:
//     - name: rack-3's supply valve commanded closed within 50 ms of the leak
//       signal: writes.rack-3.supplyIsolationOpen
//       is: { eq: 0 }
//       within: 50ms
//       after: 10s
//
// Each expectation has exactly one kind: within (+ after), hold, never, eventually, count.
import { dirname, resolve } from "node:path";
import { loadYamlFile, validator } from "../lib/config-file.js";
import { FAKETIME_OFFSET } from "./faketime.js";
import { mergePatch } from "../lib/merge-patch.js";
import { validateControl, type PodConfig } from "../pod/config.js";
import { COMMANDS, type CommandName } from "../agent/commands/schema.js";
import { FAULT_ACTION_PROPERTIES, actionProblems, type FaultAction } from "../sim/faults.js";
import { parseDuration } from "../sim/scenario.js";
import type { Condition, Expectation, ExpectationKind } from "./expectations.js";
import { SIGNAL_PATTERN } from "./signals.js";

const DURATION = { description: "5s, 500ms, 2m, or seconds", oneOf: [{ type: "number", minimum: 0, maximum: 86_400 }, { type: "string", pattern: "^\\s*\\d+(\\.\\d+)?\\s*(ms|s|m|h)?\\s*$", maxLength: 32 }] };
const NUM = { type: "number" };
const SIGNAL = { type: "string", pattern: SIGNAL_PATTERN, maxLength: 200, description: "a signal's name (docs/hil.md, Signals); its rack, output or alarm id is checked against the pod" };
const CONDITION = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  properties: { eq: NUM, ne: NUM, lt: NUM, le: NUM, gt: NUM, ge: NUM, between: { type: "array", items: NUM, minItems: 2, maxItems: 2 } },
  description: "the condition on each signal's value",
};
const WINDOW = { type: "object", additionalProperties: false, properties: { from: DURATION, to: DURATION } };

/**
 * A replay's input is a flight recording when its file has the recorder's suffix (the agent's
 * RECORDING_SUFFIX: test/hil-telemetry-replay.test.ts holds them equal), else a telemetry log.
 */
export const isFlightRecording = (file: string): boolean => file.endsWith(".pwrec");

/** What a step may do to the daemon under test (real time only: the runner owns its process). */
export const DAEMON_ACTIONS = ["kill", "terminate", "stop", "continue", "reload", "restart", "restart-refused", "second", "stall-main", "resume-main", "end-leak-thread"] as const;
export type DaemonAction = (typeof DAEMON_ACTIONS)[number];
/** What a step may do to mission control's broker (real time, `uplink: true`: the runner owns it). */
export const BROKER_ACTIONS = ["down", "up", "hang", "resume", "partition", "lossy", "hostile", "heal"] as const;
export type BrokerAction = (typeof BROKER_ACTIONS)[number];
/**
 * How mission control's command is made (docs/hil.md): signed by the runner's key, which the
 * daemon trusts as an engineer's, or spoiled in one way, each of which the pod must refuse.
 */
export const COMMAND_FORMS = ["signed", "forged", "unknown-key", "expired", "future", "wrong-pod", "again", "oversized"] as const;
/** What an `oversized` command weighs: the fault catalogue's input message of 100 MB. */
export const OVERSIZED_COMMAND_BYTES = 100 * 1024 * 1024;
export type CommandForm = (typeof COMMAND_FORMS)[number];
/** A command step: what mission control publishes to the pod (real time, `uplink: true`). */
export interface CommandStep {
  name: CommandName;
  params: Record<string, unknown>;
  as: CommandForm;
  /** how many, each made afresh (its own seq and transaction): a flood */
  times: number;
  /** how fast: this many a second; back to back without it */
  perS?: number;
}
/** Longest flood a step may publish: a flood that outlasts `maxPerS` by far is the point, memory is not. */
export const MAX_COMMAND_TIMES = 100_000;
/** The daemon's state files a `stateFile` step may damage (docs/agent.md: <stateDir>/<name>.json). */
export const STATE_FILES = ["latches", "operator", "power-budget", "gains", "strokes", "command-seq"] as const;
export type StateFile = (typeof STATE_FILES)[number];
/** How: garbage written over it (a torn write, a bad sector), or the file gone. */
export const STATE_DAMAGE = ["garbage", "delete"] as const;
export type StateDamage = (typeof STATE_DAMAGE)[number];
/** What a `config` step does to the daemon's config file: a bad edit over it, or the good one back. */
export const CONFIG_ACTIONS = ["garbage", "restore"] as const;
export type ConfigAction = (typeof CONFIG_ACTIONS)[number];
/**
 * What a step may do to the sensor gateway of a scenario with `mqttSensors` (docs/hil.md): it
 * falls silent (a dead sensor, a gateway down), publishes live again, leaves a retained copy of a
 * reading a minute old on the broker (a dead sensor's last word, which the broker hands to every
 * new subscription), or flushes the queue of readings it held while it was cut off, each dated
 * when it was taken.
 */
export const GATEWAY_ACTIONS = ["silent", "live", "retain-old", "flush"] as const;
export type GatewayAction = (typeof GATEWAY_ACTIONS)[number];
/** Most of a CPU a `cpu` step may give the daemon: a share above the machine's is no limit. */
export const MAX_CPU_SHARE = 64;
/** A step the runner does itself, not the rig (real time only). */
export type RunnerStep =
  | { atS: number; cpu: number | null }
  | { atS: number; config: ConfigAction }
  | { atS: number; stateFile: { file: StateFile; damage: StateDamage } }
  | { atS: number; daemon: DaemonAction }
  | { atS: number; broker: BrokerAction }
  | { atS: number; command: CommandStep }
  | { atS: number; gateway: GatewayAction }
  | { atS: number; clock: string };
/** The keys that make a step the runner's. */
const RUNNER_KEYS = ["daemon", "broker", "command", "clock", "stateFile", "config", "cpu", "gateway"] as const;

/** A scenario's list of racks rewired for it (transmitters, mqttSensors). */
const RACK_LIST = { type: "array", minItems: 1, maxItems: 32, uniqueItems: true, items: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_-]*$", maxLength: 64 } } as const;

export const HIL_SCENARIO_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "expect"],
  properties: {
    name: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]*$", maxLength: 100, description: "the scenario's name: its JUnit test suite and report section" },
    description: { type: "string", maxLength: 2000, description: "what it shows, in words" },
    seed: { type: "integer", minimum: 0, maximum: 2 ** 31 - 1, description: "the plant's seed: the same seed gives the same run and the same report" },
    duration: { ...DURATION, description: "how long the run lasts, scenario time (a replay: at most the recording's; default all of it)" },
    realTime: { const: true, description: "runs only in real time: what it expects holds on the rig and the daemon only (a timing that rests on the rig's plant, or what only the daemon has); virtual time refuses it before anything runs" },
    control: {
      type: "object",
      description: "a patch over the pod's `control` section for this scenario (merged key by key, a list replaced whole), checked as the config is: what the scenario needs configured, e.g. frozen-sensor detection (points.temperature.stuckMs)",
    },
    transmitters: {
      ...RACK_LIST,
      description:
        "racks whose return temperature (their loop's PV) the pod reads for this scenario as a 4–20 mA loop current through the rack device's transmitter (the simulator's `returnTempMa`, input register 11 in µA), as many sites wire it, instead of as a value: a `<rack>.returnTempMa` fault then reaches the pod on the wire. The config under test is rewired so, in both modes; a rack must have a Modbus device named after it",
    },
    uplink: { const: true, description: "real time: the daemon gets an uplink to an MQTT broker of the runner's own on loopback, watched from there as mission control would (the uplink.* signals), which `broker` steps take away and bring back" },
    mqttSensors: {
      ...RACK_LIST,
      description:
        "real time only, with uplink: true: racks whose return temperature (their loop's PV) the pod reads for this scenario from MQTT, as a site wires a sensor through a gateway: the daemon's `mqttIngest` subscribes to hil/sensors/<rack>/returnTempC on the runner's broker (payload {\"v\": °C, \"t\": epoch ms}, timePath t, stale after 2 s), and the runner's gateway publishes the rig's truth there every 250 ms; `gateway` steps fault it",
    },
    spool: {
      type: "object",
      additionalProperties: false,
      minProperties: 1,
      properties: {
        maxBytes: { type: "integer", minimum: 65536, maximum: 1_000_000_000_000, description: "the spool's size limit, bytes (the config's `uplink.spool.maxBytes`; the product's default is 64 MiB)" },
        segmentBytes: { type: "integer", minimum: 4096, maximum: 1_073_741_824, description: "its segment size, bytes: the unit the overflow policy drops (`uplink.spool.segmentBytes`)" },
      },
      description: "real time only, with uplink: true: the daemon's store-and-forward spool for this scenario, small enough for an outage of seconds to fill it (docs/mqtt.md, the overflow policy)",
    },
    replay: { type: "string", minLength: 1, maxLength: 1000, description: "a flight recording (a .pwrec file) or a captured telemetry log (any other file: the pod's telemetry messages, one a line, as JSON or as `mosquitto_sub -v` prints them), relative to this file, replayed into the virtual pod instead of running the plant: no steps, no seed, no truth signals" },
    steps: {
      type: "array",
      maxItems: 1000,
      description: "faults and loads at times (the simulator's fault actions: docs/simulator.md), or what happens to the daemon itself (`daemon`) or to mission control's broker (`broker`, with `uplink: true`): real time only",
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          at: { ...DURATION, description: "when the step happens, scenario time (or `when`)" },
          when: {
            type: "object",
            additionalProperties: false,
            required: ["signal", "is"],
            properties: { signal: SIGNAL, is: CONDITION },
            description: "instead of `at`: the step happens at the first sample at which this one signal (a pod. or truth. one; writes. too in virtual time) meets the condition, `delay` later; once. A fault action only",
          },
          delay: { ...DURATION, description: "with when: how long after the condition first held" },
          ...FAULT_ACTION_PROPERTIES,
          daemon: { enum: [...DAEMON_ACTIONS], description:
              "real time only: kill (SIGKILL), terminate (SIGTERM), stop (SIGSTOP: stalled), continue (SIGCONT), reload (SIGHUP), restart (start it again once it has exited, on the same state directory), restart-refused (start it again once it has exited, and it must refuse to start on a bad config: exit 2, the step fails if it runs; the pod is then without its daemon, the devices' leases in charge, until a `restart`), second (a second `podwarden run` on the same config and state directory while it runs: it must refuse to start, exit 3, the step fails if it does not; the running one carries on), stall-main (its main thread, the event loop of its drivers, uplink and supervisor, held at its next wait by strace, Debian's strace package, while its leak thread and control worker run on: a main thread busy for as long as it lasts), resume-main (the main thread goes on), end-leak-thread (its leak thread ended, as a crash of that thread would end it, the rest of the process running on: the runner starts a daemon of such a scenario with a hook of its own, hil/daemon-hooks.ts, that ends the thread on SIGUSR2; the step fails unless the daemon raises its `leak-thread` alarm within 5 s)",
          },
          broker: { enum: [...BROKER_ACTIONS], description: "real time only, with uplink: true: down (the broker stops listening and drops every connection, keeping its sessions and retained messages), up (it listens again on the same port), hang (as SIGSTOP: connections stay open, nothing is read or answered, so a client finds out from its keepalive), resume (as SIGCONT: it reads what waited), partition (the pod cut off from the broker, which runs on with mission control: nothing crosses either way, in a connection open or opened later; the broker's keepalive ends the pod's session and publishes its Will), lossy (the pod's link stalls 800 ms in every 2 s, as TCP stalls while it retransmits lost segments: what crosses is late, in bursts, never lost or reordered, and no stall is long enough for either end's keepalive to give the connection up), hostile (the broker breaks the protocol: every 2 s it writes a malformed packet into the pod's connection, a reserved packet type, QoS 3, a five-byte length or a 256 MB header in turn, and talks on as if it had not; the pod must end each such connection and connect again) or heal (the partition heals, the lossy link is steady again, or the broker is honest again: what waited crosses)" },
          command: {
            type: "object",
            additionalProperties: false,
            required: ["name"],
            description: "real time only, with uplink: true: mission control publishes a command to the pod (request/<name>), signed by the runner's key, which the daemon trusts with the engineer's role; its answers are the uplink.answers.* signals",
            properties: {
              name: { enum: [...COMMANDS], description: "the command (docs/mqtt.md)" },
              params: { type: "object", maxProperties: 16, description: "its parameters as sent, unchecked here: the pod checks them (default {})" },
              as: {
                enum: [...COMMAND_FORMS],
                description:
                  "signed (default); forged (signed by another key under the runner's key id), unknown-key (a key id the pod does not know), expired (issued 10 minutes ago for 60 s), future (issued an hour ahead), wrong-pod (addressed to another pod), again (the exact payload of the last command sent, published again: a replay, or a broker's redelivery), oversized (a 100 MiB message on the command's topic, JSON text but no command, made before the run: what the pod must refuse by its size, unread, with no delay to anything else)",
              },
              times: { type: "integer", minimum: 1, maximum: MAX_COMMAND_TIMES, description: "how many, each made afresh (its own seq and transaction): a flood (default 1). The step goes on while the next ones happen: a leak can come during a flood" },
              perS: { type: "number", exclusiveMinimum: 0, maximum: 100_000, description: "with times: this many a second (default: back to back, as fast as the broker takes them)" },
            },
          },
          config: { enum: [...CONFIG_ACTIONS], description: "real time only: the daemon's config file overwritten by a bad edit (garbage: YAML that is not a config), or the good one put back (restore); a `daemon: reload` then asks it to take the file" },
          stateFile: {
            type: "object",
            additionalProperties: false,
            required: ["file"],
            description: "real time only: one of the daemon's state files damaged in its state directory (best while the daemon is down: between a kill and a restart)",
            properties: {
              file: { enum: [...STATE_FILES], description: "<stateDir>/<file>.json (docs/agent.md)" },
              damage: { enum: [...STATE_DAMAGE], description: "garbage written over it (a torn write, a bad sector; the default) or the file deleted" },
            },
          },
          cpu: {
            oneOf: [
              { type: "number", exclusiveMinimum: 0, maximum: MAX_CPU_SHARE },
              { const: "full", type: "string" },
            ],
            description:
              "real time only, as root: the daemon's whole process held to this share of one CPU (0.05: 5 ms of CPU in each 100 ms) by a cgroup of its own (v2 cpu.max, or v1's CFS quota), as a host starved by other work or a systemd CPUQuota= leaves it; `full` lifts the limit. No CPU quota binds a SCHED_FIFO thread, so a scenario that starves the daemon sets `control: { schedFifo: false }`: the daemon without its real-time threads, as on a host that does not grant CAP_SYS_NICE (the step fails on a daemon with one)",
          },
          gateway: {
            enum: [...GATEWAY_ACTIONS],
            description:
              "real time only, with mqttSensors: the sensor gateway falls silent (silent), publishes live again (live), leaves on the broker a retained copy of each sensor's reading dated a minute ago (retain-old: what a new subscription, after a reconnect, is handed first), or flushes the 30 readings of an outage that ended 4 s ago, each dated when it was taken (33 s to 4 s ago, all older than the 2 s staleness), oldest first (flush: a gateway back from an outage)",
          },
          clock: { type: "string", pattern: FAKETIME_OFFSET.source, description: "real time only: the daemon's wall clock is set this far from the true time (libfaketime, Debian's faketime package; its monotonic clock stays true, as when NTP or an operator sets the time): +1d, -2h, +0 back to true" },
        },
      },
    },
    expect: {
      type: "array",
      minItems: 1,
      maxItems: 200,
      description: "what must happen",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "is"],
        properties: {
          name: { type: "string", minLength: 1, maxLength: 300, description: "the expectation in words: its JUnit test case" },
          signal: SIGNAL,
          signals: { type: "array", minItems: 1, maxItems: 64, items: SIGNAL },
          except: { type: "array", maxItems: 64, items: { type: "string", maxLength: 64 }, description: "racks a `*` signal leaves out" },
          is: CONDITION,
          within: { ...DURATION, description: "the condition first holds at most this long after `after`" },
          after: {
            description: "with within: from when: a scenario time, or the first sample at which a signal meets a condition",
            oneOf: [DURATION, { type: "object", additionalProperties: false, required: ["signal", "is"], properties: { signal: SIGNAL, is: CONDITION } }],
          },
          hold: { ...WINDOW, description: "the condition holds at every sample in the window (default: the whole run)" },
          never: { ...WINDOW, description: "the condition holds at no sample in the window" },
          eventually: { type: "object", additionalProperties: false, required: ["by"], properties: { by: DURATION } },
          count: { type: "object", additionalProperties: false, properties: { from: DURATION, to: DURATION, min: { type: "integer", minimum: 0 }, max: { type: "integer", minimum: 0 } }, description: "how many times the condition came to hold (for writes: how many writes met it)" },
        },
      },
    },
  },
};

interface RawExpectation {
  name: string;
  signal?: string;
  signals?: string[];
  except?: string[];
  is: Condition;
  within?: number | string;
  after?: number | string | { signal: string; is: Condition };
  hold?: { from?: number | string; to?: number | string };
  never?: { from?: number | string; to?: number | string };
  eventually?: { by: number | string };
  count?: { from?: number | string; to?: number | string; min?: number; max?: number };
}

interface RawHilScenario {
  name: string;
  description?: string;
  seed?: number;
  duration?: number | string;
  replay?: string;
  realTime?: true;
  uplink?: true;
  mqttSensors?: string[];
  spool?: { maxBytes?: number; segmentBytes?: number };
  control?: Record<string, unknown>;
  transmitters?: string[];
  steps?: (Record<string, unknown> & { at?: number | string; when?: { signal: string; is: Condition }; delay?: number | string })[];
  expect: RawExpectation[];
}

/** A step on a condition (`when`), with where it was written (`steps[<index>]`). */
export interface WhenStep {
  index: number;
  when: { signal: string; is: Condition };
  delayMs: number;
  action: FaultAction;
}

/** An expectation as written, its times in ms, its signals still names (a `*` not expanded, less `except`). */
export interface ScenarioExpectation extends Expectation {
  except: string[];
}

export interface HilScenario {
  name: string;
  description: string;
  seed?: number;
  /** the run's length; a replay's: at most the recording's (Infinity: all of it) */
  durationMs: number;
  /** a flight recording replayed instead of the plant (an absolute path) */
  replay?: string;
  steps: { atS: number; action: FaultAction }[];
  /** fault actions on a condition: at the first sample at which `when` holds, `delayMs` later, once */
  whenSteps: WhenStep[];
  /** what the runner does itself at times, to the daemon or to mission control's broker (real time only) */
  runnerSteps: RunnerStep[];
  /** runs only in real time (`realTime: true`, or a runner step) */
  realTimeOnly: boolean;
  /** the daemon gets an uplink to the runner's own broker, watched as mission control (real time) */
  uplink: boolean;
  /** racks whose return temperature the daemon reads from MQTT, published by the runner's sensor gateway */
  mqttSensors?: string[];
  /** the daemon's uplink spool for this scenario (uplink.spool: maxBytes, segmentBytes) */
  spool?: { maxBytes?: number; segmentBytes?: number };
  /** a patch over the pod's `control` section for this scenario (scenarioPod) */
  control?: Record<string, unknown>;
  /** racks read through their 4–20 mA return-temperature transmitter (the config under test rewired so) */
  transmitters?: string[];
  expect: ScenarioExpectation[];
  /** where it was read from */
  file: string;
}

const toMs = (d: number | string | undefined): number | undefined => (d === undefined ? undefined : Math.round(parseDuration(d) * 1000 * 1000) / 1000);

const KINDS = ["within", "hold", "never", "eventually", "count"] as const;

const isTime = (v: RawExpectation["after"]): v is number | string => typeof v === "number" || typeof v === "string";

function problems(s: RawHilScenario): string[] {
  const out = (s.steps ?? []).flatMap((step, i) => {
    const timing = (step.at === undefined) === (step.when === undefined) ? [`steps[${i}]: needs at or when, not both or neither`] : [];
    if (step.delay !== undefined && step.when === undefined) timing.push(`steps[${i}]: delay goes with when`);
    if (timing.length > 0) return timing;
    const own = RUNNER_KEYS.find((k) => k in step);
    if (own !== undefined && step.when !== undefined) return [`steps[${i}]: a ${own} step happens at a time (at), not on a condition`];
    if (own === undefined) return actionProblems(step, `steps[${i}]`);
    const more = Object.keys(step).filter((k) => k !== "at" && k !== own);
    if (more.length > 0) return [`steps[${i}]: a ${own} step has nothing else (${more.join(", ")})`];
    if (own === "broker" && s.uplink !== true) return [`steps[${i}]: a broker step needs uplink: true (the broker is the runner's own)`];
    if (own === "gateway" && s.mqttSensors === undefined) return [`steps[${i}]: a gateway step needs mqttSensors (the gateway publishes their readings)`];
    if (own === "command" && s.uplink !== true) return [`steps[${i}]: a command step needs uplink: true (mission control publishes it through the runner's own broker)`];
    if (own === "command" && (step.command as { as?: string }).as === "again") {
      const at = parseDuration(step.at as number | string);
      const earlier = (s.steps ?? []).some((x, j) => j !== i && "command" in x && x.at !== undefined && ((x.command as { as?: string }).as ?? "signed") !== "again" && parseDuration(x.at) < at);
      if (!earlier) return [`steps[${i}]: a command sent again needs an earlier command step to repeat`];
    }
    return [];
  });
  if (s.replay === undefined && s.duration === undefined) out.push("duration: required (only a replay may leave it out: the recording's length)");
  if (s.replay !== undefined && (s.steps !== undefined || s.seed !== undefined)) out.push("replay: a replay has no steps and no seed (its inputs are the recording's)");
  if (s.replay !== undefined && s.uplink === true) out.push("uplink: a replay has no daemon, so no uplink");
  if (s.spool !== undefined && s.uplink !== true) out.push("spool: the daemon's spool holds what its uplink sends: it needs uplink: true");
  if (s.mqttSensors !== undefined && s.uplink !== true) out.push("mqttSensors: the sensor gateway publishes through the runner's broker: it needs uplink: true");
  if (s.mqttSensors !== undefined && s.transmitters?.some((r) => s.mqttSensors?.includes(r)) === true) out.push("mqttSensors: a rack's return temperature comes from a transmitter or from MQTT, not both");
  if (s.replay !== undefined && s.transmitters !== undefined) out.push("transmitters: a replay's inputs are the recording's, not read from a wire");
  s.expect.forEach((e, i) => {
    const at = `expect[${i}] (${e.name})`;
    const kinds = KINDS.filter((k) => e[k] !== undefined);
    if (kinds.length !== 1) out.push(`${at}: needs exactly one of ${KINDS.join(", ")} (has ${kinds.length === 0 ? "none" : kinds.join(", ")})`);
    if ((e.within === undefined) !== (e.after === undefined)) out.push(`${at}: within and after go together`);
    if ((e.signal === undefined) === (e.signals === undefined)) out.push(`${at}: give signal or signals, not both or neither`);
    if (e.count !== undefined && e.count.min !== undefined && e.count.max !== undefined && e.count.min > e.count.max) out.push(`${at}: count.min is above count.max`);
    if (e.is.between !== undefined && e.is.between[0] > e.is.between[1]) out.push(`${at}: is.between is [low, high]`);
    const duration = s.duration === undefined ? Infinity : parseDuration(s.duration);
    // (a step's `when` signal is checked against the run's mode by the runner: virtual-runner planRun)
    const uplink = [...(e.signals ?? []), e.signal ?? "", isTime(e.after) || e.after === undefined ? "" : e.after.signal].filter((x) => x.startsWith("uplink."));
    if (uplink.length > 0 && s.uplink !== true) out.push(`${at}: ${uplink.join(", ")} needs uplink: true (mission control's view of the pod, through the runner's own broker)`);
    if (s.replay !== undefined) {
      const truth = [...(e.signals ?? []), e.signal ?? "", isTime(e.after) || e.after === undefined ? "" : e.after.signal].filter((x) => x.startsWith("truth."));
      if (truth.length > 0) out.push(`${at}: a replay has no plant, so no ${truth.join(", ")}: pod. and writes. signals only`);
    }
    for (const [k, v] of [["after", isTime(e.after) ? e.after : undefined], ["hold.from", e.hold?.from], ["hold.to", e.hold?.to], ["never.from", e.never?.from], ["never.to", e.never?.to], ["eventually.by", e.eventually?.by], ["count.from", e.count?.from], ["count.to", e.count?.to]] as const) {
      if (v !== undefined && parseDuration(v) > duration) out.push(`${at}: ${k} (${String(v)}) is after the run's end (${String(s.duration ?? "")})`);
    }
  });
  return out;
}

const validate = validator<RawHilScenario>(HIL_SCENARIO_SCHEMA, problems);

export function parseHilScenario(data: unknown, file = "scenario"): HilScenario {
  const raw = validate(data, file);
  const isRunners = (x: object): boolean => RUNNER_KEYS.some((k) => k in x);
  const timed = (raw.steps ?? []).filter((x) => x.at !== undefined);
  const steps = timed.filter((x) => !isRunners(x)).map(({ at, ...action }) => ({ atS: parseDuration(at as number | string), action: action as FaultAction }));
  steps.sort((a, b) => a.atS - b.atS);
  const runnerSteps = timed.filter(isRunners).map((x): RunnerStep => {
    const atS = parseDuration(x.at as number | string);
    if ("daemon" in x) return { atS, daemon: x.daemon as DaemonAction };
    if ("broker" in x) return { atS, broker: x.broker as BrokerAction };
    if ("clock" in x) return { atS, clock: x.clock as string };
    if ("config" in x) return { atS, config: x.config as ConfigAction };
    if ("cpu" in x) return { atS, cpu: x.cpu === "full" ? null : (x.cpu as number) };
    if ("gateway" in x) return { atS, gateway: x.gateway as GatewayAction };
    if ("stateFile" in x) {
      const st = x.stateFile as { file: StateFile; damage?: StateDamage };
      return { atS, stateFile: { file: st.file, damage: st.damage ?? "garbage" } };
    }
    const c = x.command as { name: CommandName; params?: Record<string, unknown>; as?: CommandForm; times?: number; perS?: number };
    return { atS, command: { name: c.name, params: c.params ?? {}, as: c.as ?? "signed", times: c.times ?? 1, ...(c.perS === undefined ? {} : { perS: c.perS }) } };
  });
  const whenSteps = (raw.steps ?? []).flatMap(({ when, delay, at: _at, ...action }, index): WhenStep[] => (when === undefined ? [] : [{ index, when, delayMs: toMs(delay) ?? 0, action: action as FaultAction }]));
  runnerSteps.sort((a, b) => a.atS - b.atS);
  const expect = raw.expect.map((e): ScenarioExpectation => {
    const kind: ExpectationKind = e.within !== undefined ? "within" : e.hold !== undefined ? "hold" : e.never !== undefined ? "never" : e.eventually !== undefined ? "eventually" : "count";
    const w = e.hold ?? e.never ?? e.count;
    return {
      name: e.name,
      kind,
      signals: e.signals ?? [e.signal as string],
      except: e.except ?? [],
      is: e.is,
      withinMs: toMs(e.within),
      afterMs: isTime(e.after) ? toMs(e.after) : undefined,
      ...(e.after === undefined || isTime(e.after) ? {} : { afterSignal: e.after }),
      fromMs: toMs(w?.from),
      toMs: toMs(w?.to),
      byMs: toMs(e.eventually?.by),
      min: e.count?.min,
      max: e.count?.max,
    };
  });
  return {
    name: raw.name,
    description: raw.description ?? "",
    seed: raw.seed,
    durationMs: raw.duration === undefined ? Infinity : parseDuration(raw.duration) * 1000,
    ...(raw.replay === undefined ? {} : { replay: resolve(dirname(file), raw.replay) }),
    steps,
    whenSteps,
    runnerSteps,
    realTimeOnly: raw.realTime === true || runnerSteps.length > 0 || raw.mqttSensors !== undefined,
    uplink: raw.uplink === true,
    ...(raw.mqttSensors === undefined ? {} : { mqttSensors: raw.mqttSensors }),
    ...(raw.spool === undefined ? {} : { spool: raw.spool }),
    ...(raw.control === undefined ? {} : { control: raw.control }),
    ...(raw.transmitters === undefined ? {} : { transmitters: raw.transmitters }),
    expect,
    file,
  };
}

/** The pod a scenario runs on: `pod` with the scenario's `control` patch over its own, checked as the config is (a ConfigError naming the scenario). */
export function scenarioPod<T extends PodConfig>(s: Pick<HilScenario, "control" | "file">, pod: T): T {
  if (s.control === undefined) return pod;
  return { ...pod, control: validateControl(mergePatch(pod.control, s.control), `${s.file}: control`) };
}

export function loadHilScenario(path: string): HilScenario {
  return parseHilScenario(loadYamlFile(path, validator<unknown>({})), path);
}
