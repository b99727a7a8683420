// The HMI's alarm history and event log: the pod's last events (alarms raised, acknowledged,
// escalated and cleared, mode changes, leak escalations, proven isolations, maintenance, pump duty, lease
// expiries, audited commands and HMI actions), each with its time and a line in words, in a
// fixed ring. In memory: the uplink's spool is the durable record, for mission control.
import type { AgentEvent } from "../pod-api.js";

export interface LoggedEvent {
  seq: number;
  at: string;
  type: string;
  /** a rack, device or subsystem the event is about, when it has one */
  source: string;
  text: string;
}

/** The most events one request gets. */
export const MAX_EVENTS_PER_REQUEST = 200;

/** One line in words for an event. */
export function eventWords(e: AgentEvent): { source: string; text: string } {
  switch (e.type) {
    case "alarm.raised":
    case "alarm.cleared":
    case "alarm.acknowledged":
    case "alarm.escalated": {
      const verb = e.type.slice("alarm.".length);
      const who = e.type === "alarm.acknowledged" && e.alarm.acknowledgedBy !== undefined ? ` by ${e.alarm.acknowledgedBy}` : "";
      return { source: e.alarm.source, text: `${e.alarm.severity} ${verb}${who}: ${e.alarm.message}` };
    }
    case "mode.changed":
      return { source: "pod", text: `mode ${e.from} -> ${e.to}: ${e.reason}` };
    case "leak.escalated":
      return { source: e.rack, text: `leak escalated: ${e.actions.join(", ")}` };
    case "isolation.proven":
      return { source: e.rack, text: "isolation proven: no flow" };
    case "maintenance.changed":
      return { source: "pod", text: `maintenance ${e.on ? "on" : "off"}` };
    case "pump.duty":
      return { source: "cdu", text: `pump lead ${e.from} -> ${e.to}: ${e.why}` };
    case "setpoint.expired":
      return { source: e.loop, text: `setpoint lease ran out: back to ${e.value}` };
    case "override.expired":
      return { source: e.loop, text: `Override lease ran out: back to ${e.mode}${e.outputPct === undefined ? "" : ` ${e.outputPct} %`}` };
    case "agent.started":
      return { source: "agent", text: "agent started" };
    case "agent.stopping":
      return { source: "agent", text: `agent stopping: ${e.reason}` };
    case "tuning.started":
      return { source: e.loop, text: `relay autotune started by ${e.by}` };
    case "tuning.ended":
      return {
        source: e.loop,
        text: `relay autotune ${e.state}${e.reason === undefined ? "" : `: ${e.reason}`}${e.ku === undefined || e.puS === undefined ? "" : ` (Ku ${e.ku.toPrecision(3)}, Pu ${e.puS.toPrecision(3)} s, recommended ${e.recommended ?? "?"})`}`,
      };
    case "stroke.started":
      return { source: e.rack, text: `partial-stroke test of the ${e.valve} isolation valve started by ${e.by}` };
    case "stroke.ended":
      return { source: e.rack, text: `partial-stroke test of the ${e.valve} isolation valve ${e.state}${e.reason === undefined ? "" : `: ${e.reason}`}${e.breakawayMs === undefined ? "" : ` (left its open limit in ${e.breakawayMs} ms${e.returnMs === undefined ? "" : `, back in ${e.returnMs} ms`})`}` };
    case "command.audit":
      return { source: e.rack ?? "commands", text: `${e.action} by ${e.by}: ${e.result}${e.reason === undefined ? "" : ` (${e.reason})`}${e.suppressed === undefined ? "" : `, ${e.suppressed} more not listed`}` };
  }
}

export class EventLog {
  private readonly ring: LoggedEvent[] = [];
  private seq = 0;

  constructor(readonly capacity: number) {}

  /** Logs an event; returns it as logged. */
  add(e: AgentEvent, at = new Date()): LoggedEvent {
    const logged = { seq: ++this.seq, at: at.toISOString(), type: e.type, ...eventWords(e) };
    this.ring.push(logged);
    if (this.ring.length > this.capacity) this.ring.shift();
    return logged;
  }

  /** Newest first: those whose type starts with `type` and whose source or text contains `text` (case-insensitive), at most `limit`. */
  query(type: string, text: string, limit: number): LoggedEvent[] {
    const needle = text.toLowerCase();
    const out: LoggedEvent[] = [];
    for (let i = this.ring.length - 1; i >= 0 && out.length < limit; i--) {
      const e = this.ring[i];
      if (!e.type.startsWith(type)) continue;
      if (needle !== "" && !e.text.toLowerCase().includes(needle) && !e.source.toLowerCase().includes(needle)) continue;
      out.push(e);
    }
    return out;
  }
}
