// A device's side of the safety lease, in the style its firmware offers (docs/safety.md, "Device
// leases"). In every style the device itself puts its outputs at their safe values when the
// lease runs out, so a dead, stalled or unhealthy podwarden leaves the plant safe:
//
// - heartbeat-counter: a register written every period with a counter that moves; the device's
//   timer restarts when the value changes (podwarden's simulator, custom firmware);
// - watchdog-register: a register written every period with the same value; any write restarts
//   the device's timer (many I/O modules' "watchdog reset" register);
// - comms-watchdog: the device's own timer on any traffic (many I/O modules' communication
//   watchdog). podwarden reads a register every period to keep traffic up while control is
//   healthy, and sends the device nothing at all while it is not, so its timer runs out.
//
// The device's own lease time (`timeout`) is written after every connect where the config says
// so, and read back, at the first renewal (so only once control is healthy, for a comms watchdog
// too): a device holding another time is unwell (`problem`, in its health), as its
// outputs would not fall back when the config says they do.
import type { ModbusOutcome, ModbusRequest } from "./types.js";
import { FC } from "./protocol.js";

export type LeaseStyle = "heartbeat-counter" | "watchdog-register" | "comms-watchdog";

export interface LeaseConfig {
  style: LeaseStyle;
  /** heartbeat-counter, watchdog-register: the register written; comms-watchdog: a holding register read */
  address: number;
  periodMs: number;
  /** watchdog-register: the value written every period */
  value: number;
  /** the device's own lease time: its register, in units of unitMs; written at connect when `write` */
  timeout?: { address: number; ms: number; unitMs: number; write: boolean };
  /** the safe values the device holds for its outputs (set in the device, by its own tool): each read at connect and compared */
  safeValues: { output: string; table: "holding" | "coil"; address: number; value: number }[];
}

/** The request that renews a lease in its style; `counter`, a heartbeat counter's next value. */
export function renewalRequest(c: LeaseConfig, counter: number): ModbusRequest {
  if (c.style === "heartbeat-counter") return { fc: FC.WRITE_SINGLE_REGISTER, address: c.address, value: counter & 0xffff };
  if (c.style === "watchdog-register") return { fc: FC.WRITE_SINGLE_REGISTER, address: c.address, value: c.value };
  return { fc: FC.READ_HOLDING_REGISTERS, address: c.address, count: 1 };
}

/** Sends one request to the device on its bus, as a job that is never shed. */
export type LeaseSend = (req: ModbusRequest, done: (o: ModbusOutcome) => void) => void;

export class DeviceLease {
  /** why the device's lease is not as the config says (its lease time, its safe values), or null */
  problem: string | null = null;
  private readonly problems = new Map<string, string>();
  private counter = 0;
  /** a connect came since the lease time was last checked: checked at the next renewal, once control is healthy */
  private checkDue = false;

  constructor(
    readonly config: LeaseConfig,
    private readonly send: LeaseSend,
    /** the health gate: control is healthy */
    private readonly gateOpen: () => boolean,
  ) {}

  /** Whether every request to the device must wait: a comms watchdog's device while control is not healthy. */
  silent(): boolean {
    return this.config.style === "comms-watchdog" && !this.gateOpen();
  }

  /** The device's connection is (again) up: its lease time is checked at the next renewal. */
  connected(): void {
    this.checkDue = this.config.timeout !== undefined || this.config.safeValues.length > 0;
  }

  /** One renewal now, in the device's style (the caller checks the gate where it must). */
  renew(): void {
    if (this.checkDue) {
      this.checkDue = false;
      this.checkTimeout();
      this.checkSafeValues();
    }
    this.counter = (this.counter + 1) & 0xffff;
    this.send(renewalRequest(this.config, this.counter), () => undefined);
  }

  /** The device's lease time written (where configured) and read back. */
  private checkTimeout(): void {
    const t = this.config.timeout;
    if (t === undefined) return;
    const want = Math.round(t.ms / t.unitMs);
    const verify = (): void =>
      this.send({ fc: FC.READ_HOLDING_REGISTERS, address: t.address, count: 1 }, (o) => {
        if (!o.ok) return; // unanswered: the breaker and the next connect tell
        const got = o.data[0];
        this.said("timeout", got === want ? null : `its lease time reads ${got * t.unitMs} ms (register ${t.address}), the config says ${t.ms} ms`);
      });
    if (t.write) this.send({ fc: FC.WRITE_SINGLE_REGISTER, address: t.address, value: want }, verify);
    else verify();
  }

  /**
   * Each safe value the device holds, read back: the value an output takes when the lease runs
   * out is the device's, set with its own tool, and a device holding another would not fail safe
   * the way the config (and docs/safety.md's table) says it does.
   */
  private checkSafeValues(): void {
    for (const v of this.config.safeValues) {
      const fc = v.table === "coil" ? FC.READ_COILS : FC.READ_HOLDING_REGISTERS;
      this.send({ fc, address: v.address, count: 1 }, (o) => {
        if (!o.ok) return; // unanswered: the breaker and the next connect tell
        const got = o.data[0];
        this.said(`safe:${v.table}:${v.address}`, got === v.value ? null : `its safe value for ${v.output} reads ${got} (${v.table} ${v.address}), the config says ${v.value}`);
      });
    }
  }

  private said(key: string, why: string | null): void {
    if (why === null) this.problems.delete(key);
    else this.problems.set(key, why);
    this.problem = this.problems.size === 0 ? null : [...this.problems.values()].join("; ");
  }
}
