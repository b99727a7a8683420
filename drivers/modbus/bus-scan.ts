// A bus scan for commissioning (`podwarden scan --bus <name>`): every unit id in a range is asked
// one harmless read, one at a time, through the bus's own scheduler at its lowest priority, so
// the leak, control and telemetry polls go first at every frame boundary and a scan never
// holds the bus from them. An answer of any kind, an exception included, shows a unit is there;
// a frame that fails its CRC or framing check is the usual sign of a wrong baud rate, parity or
// stop bits (the device answered, in a framing this end did not read), or of two units at one id.
import { monoMs } from "../../lib/clock.js";
import { CircuitBreaker } from "../breaker.js";
import { newDeviceStats, type Bus, type BusDevice } from "./bus.js";
import { FC } from "./protocol.js";
import type { ModbusOutcome } from "./types.js";

export interface ScanOptions {
  /** first and last unit id probed (1–247) */
  from: number;
  to: number;
  /** how long each probe waits for an answer, ms */
  timeoutMs: number;
  /** the holding register read (its value is not used) */
  register: number;
}

/** One unit id's probe. */
export interface ScanRow {
  unitId: number;
  /** answered: a reply (data or an exception); framing: a reply this end could not read; silent: nothing within the timeout */
  result: "answered" | "framing" | "silent" | "skipped";
  /** request to reply (or to the timeout), ms */
  ms: number;
  /** for an exception, its code; for framing, skipped and disconnection, what the driver said */
  detail?: string;
  /** the configured device at this unit id on this bus, if any */
  device?: string;
}

/** A sheddable probe found the bus over its time budget: asked again this many times, this far apart. */
const BUSY_RETRIES = 20;
const BUSY_WAIT_MS = 100;

function probe(bus: Bus, device: BusDevice, register: number): Promise<ModbusOutcome> {
  return new Promise((done) => bus.submit({ device, request: { fc: FC.READ_HOLDING_REGISTERS, address: register, count: 1 }, priority: 9, sheddable: true, done }));
}

/** Scans `bus`: one row per unit id, in order. */
export async function scanBus(bus: Bus, o: ScanOptions, known: ReadonlyMap<number, string>, stopped: () => boolean, held: (unitId: number) => string | null = () => null): Promise<ScanRow[]> {
  const rows: ScanRow[] = [];
  for (let unitId = o.from; unitId <= o.to && !stopped(); unitId++) {
    // a device whose communication watchdog is being left to run out (control not healthy) is
    // not asked: a probe is traffic, and would restart its timer
    const why = held(unitId);
    if (why !== null) {
      const configured = known.get(unitId);
      rows.push({ unitId, result: "skipped", ms: 0, detail: why, ...(configured === undefined ? {} : { device: configured }) });
      continue;
    }
    // a breaker of its own that never opens: a silent id is an answer here, not a fault
    const probed: BusDevice = { name: `scan:${unitId}`, unitId, timeoutMs: o.timeoutMs, retries: 0, retryDelayMs: 0, breaker: new CircuitBreaker(Number.MAX_SAFE_INTEGER, { baseMs: 1, maxMs: 1 }, monoMs), stats: newDeviceStats() };
    let outcome: ModbusOutcome;
    let t0: number;
    let tries = 0;
    for (;;) {
      t0 = monoMs();
      outcome = await probe(bus, probed, o.register);
      // the bus was over its time budget: the scan waits its turn rather than take the others' time
      if (outcome.ok || outcome.kind !== "error" || ++tries > BUSY_RETRIES || stopped()) break;
      await new Promise((r) => setTimeout(r, BUSY_WAIT_MS));
    }
    const ms = Math.round((monoMs() - t0) * 10) / 10;
    const configured = known.get(unitId);
    const row: ScanRow = { unitId, result: "skipped", ms, ...(configured === undefined ? {} : { device: configured }) };
    if (outcome.ok) row.result = "answered";
    else if (outcome.kind === "exception") Object.assign(row, { result: "answered", detail: `exception ${outcome.code ?? "?"}` });
    else if (outcome.kind === "corrupt" || outcome.kind === "collision") Object.assign(row, { result: "framing", detail: outcome.message.slice(0, 120) });
    else if (outcome.kind === "timeout") row.result = "silent";
    else row.detail = outcome.message.slice(0, 120);
    rows.push(row);
  }
  return rows;
}
