// The leak thread as a field driver: the leak inputs, isolation valves and rack power outputs of
// TCP devices, and the serial buses that carry any of them whole, served on a thread of their own
// (agent/control/leak-thread.ts) so that nothing the rest of the pod does delays an isolation. An
// unasked end of the thread is a Critical alarm and a restart with backoff.
import type { ScanOptions, ScanRow } from "../../drivers/modbus/bus-scan.js";
import { Backoff } from "../../lib/backoff.js";
import { monoMs } from "../../lib/clock.js";
import type { PodDecisions } from "../../pod/wiring.js";
import type { Frames } from "../control/frames.js";
import { LeakThread, type LeakThreadOptions } from "../control/leak-thread.js";
import type { Logger } from "../log.js";
import type { ProblemReporter } from "../pod-api.js";
import { modbusHealth, type DeviceHealth, type FieldDriver } from "./field-driver.js";

/** How often the control plane's health is told to the leak thread, ms. */
const HEALTH_EVERY_MS = 50;
/**
 * How long one telling holds, ms: three tellings, so a late timer does not stop a lease; and far
 * inside a lease period (500 ms in configs/pod-template.yaml), so a held control plane stops
 * the heartbeats a lease period's share later than the main driver's would, at most.
 */
const HEALTH_GOOD_MS = 150;

export class LeakPath implements FieldDriver {
  readonly name = "leak-thread";
  readonly thread: LeakThread;
  private readonly backoff = new Backoff({ baseMs: 1000, maxMs: 30_000 });
  private restartTimer: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private running = false;
  private healthTimer: NodeJS.Timeout | undefined;
  private healthGate: () => boolean = () => false;

  constructor(
    o: Omit<LeakThreadOptions, "onDied">,
    private readonly frames: () => Frames,
    private readonly problems: ProblemReporter,
    private readonly log: Logger,
  ) {
    this.thread = new LeakThread({ ...o, onDied: (why) => this.died(why) });
  }

  async start(): Promise<void> {
    this.running = true;
    this.startedAt = monoMs();
    clearInterval(this.healthTimer);
    this.healthTimer = setInterval(() => this.tellHealth(), HEALTH_EVERY_MS);
    try {
      await this.thread.start(this.frames());
    } catch (err) {
      // a start that fails is the start's to answer (the agent stops whole: startAgent), not a
      // death to restart from: a restart scheduled by its exit came during the stop's safe drive
      this.running = false;
      clearTimeout(this.restartTimer);
      clearInterval(this.healthTimer);
      throw err;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.restartTimer);
    clearInterval(this.healthTimer);
    this.thread.setHealthy(false, 0);
    await this.thread.stop();
  }

  /**
   * The gate for the leases of the owned buses' devices, as the main driver's
   * (ModbusDriver.setHealthGate): asked every HEALTH_EVERY_MS on this thread, and good for
   * HEALTH_GOOD_MS in the leak thread, so that a control plane held for longer stops their
   * heartbeats as it would stop its own.
   */
  setHealthGate(gate: () => boolean): void {
    this.healthGate = gate;
  }

  private tellHealth(): void {
    this.thread.setHealthy(this.running && this.healthGate(), HEALTH_GOOD_MS);
  }

  ownsBus(name: string): boolean {
    return this.thread.ownsBus(name);
  }

  scan(bus: string, o: ScanOptions): Promise<ScanRow[]> {
    return this.thread.scan(bus, o);
  }

  /**
   * The leak thread ended unasked: Critical alarm while it is down, and a restart with backoff.
   * While it is down its leak inputs go stale, so the hot path treats them as a faulty sensor
   * (`isolation.leakSensorFault`); the main thread cannot take them over without a new driver.
   */
  private died(why: string): void {
    this.problems.reportProblem("leak-thread", {
      severity: "Critical",
      source: "agent",
      message: `the leak thread stopped (${why}): its leak inputs go stale and their racks fail as isolation.leakSensorFault says until it is restarted`,
    });
    if (!this.running) return;
    // a thread that ran a good while died of something rare: restart it promptly; one that dies
    // at once each time backs off, to 30 s, rather than spinning
    if (monoMs() - this.startedAt > 60_000) this.backoff.reset();
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.restart(), this.backoff.next());
  }

  private async restart(): Promise<void> {
    if (!this.running || this.thread.running) return;
    this.startedAt = monoMs();
    try {
      await this.thread.start(this.frames());
      this.log.warn("leak thread restarted");
      this.problems.resolveProblem("leak-thread");
    } catch {
      // its exit has already reported the death and scheduled the next attempt
    }
  }

  ownsOutput(id: string): boolean {
    return this.thread.ownsOutput(id);
  }

  ownsPoint(id: string): boolean {
    return this.thread.ownsPoint(id);
  }

  /**
   * The thread writes the isolation and power outputs from the frames and the decisions it is
   * handed (false: nothing is sent from here); an owned bus's other outputs are sent to it.
   */
  setOutput(id: string, value: number): boolean {
    return this.thread.write(id, value);
  }

  outputState(id: string): ReturnType<LeakThread["outputState"]> {
    return this.thread.outputState(id);
  }

  /** Its own connections to the devices, each alarmed apart from the main driver's (LEAK_CONNECTION_SUFFIX). */
  health(): DeviceHealth[] {
    return modbusHealth(this.thread.stats());
  }

  setDecisions(d: PodDecisions): void {
    this.thread.setDecisions(d);
  }

  setStroke(rack: number, bits: number, maxMs: number): void {
    this.thread.setStroke(rack, bits, maxMs);
  }
}
