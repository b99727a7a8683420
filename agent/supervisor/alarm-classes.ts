// Which class an alarm id belongs to, for its on- and off-delays (supervisor.alarmClasses).
import { inFamily, type AlarmTiming } from "./alarms.js";
import type { SupervisorConfig } from "./schema.js";

type ClassKey = keyof SupervisorConfig["alarmClasses"];

/** The id families of each class: a prefix ending in ':' takes the family, a whole id the one alarm. */
const FAMILIES: Record<ClassKey, readonly string[]> = {
  device: ["device:"],
  failsafe: ["failsafe:"],
  degraded: ["degraded:"],
  leakSensor: ["leak-sensor:"],
  flowMeter: ["flow-meter:"],
  overtemp: ["overtemp:"],
  heatBalance: ["heat-balance:"],
  valve: ["valve:"],
  power: ["power:budget", "power:coolant"],
  overrun: ["control:overrun"],
};

export function alarmClassOf(id: string): ClassKey | undefined {
  for (const [key, fams] of Object.entries(FAMILIES) as [ClassKey, readonly string[]][]) {
    if (fams.some((f) => inFamily(id, f))) return key;
  }
  return undefined;
}

/** Each alarm's delays under a supervisor config: its class's, else none on and the clear dwell off. */
export function alarmTiming(s: SupervisorConfig): (id: string) => AlarmTiming {
  return (id) => {
    const key = alarmClassOf(id);
    const c = key === undefined ? undefined : s.alarmClasses[key];
    return { onDelayMs: c?.onDelayMs ?? 0, offDelayMs: c?.offDelayMs ?? s.alarmClearDwellMs };
  };
}
