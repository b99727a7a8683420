// Requests and outcomes shared by the Modbus transports, the bus scheduler and the driver.
import type { Quality } from "../../lib/points.js";
import type { FC } from "./protocol.js";
import { EXCEPTION } from "./protocol.js";

export type ModbusRequest =
  | { fc: typeof FC.READ_COILS | typeof FC.READ_DISCRETE_INPUTS | typeof FC.READ_HOLDING_REGISTERS | typeof FC.READ_INPUT_REGISTERS; address: number; count: number }
  | { fc: typeof FC.WRITE_SINGLE_COIL; address: number; value: number }
  | { fc: typeof FC.WRITE_SINGLE_REGISTER; address: number; value: number }
  | { fc: typeof FC.WRITE_MULTIPLE_COILS; address: number; values: number[] }
  | { fc: typeof FC.WRITE_MULTIPLE_REGISTERS; address: number; values: number[] };

/**
 * "collision": on a shared RTU bus, what arrived was another unit's frame (a neighbour's late
 * answer) or the addressed unit's frame run together with one. The bus was garbled, not the
 * addressed device shown dead, so it is retried but not held against that device's breaker.
 */
export type FailureKind = "timeout" | "exception" | "disconnected" | "corrupt" | "collision" | "error";

export type ModbusOutcome =
  | { ok: true; data: number[] }
  | { ok: false; kind: FailureKind; code?: number; message: string };

/** A transport never rejects: every failure is an outcome the scheduler can reason about. */
export interface ModbusTransport {
  /** requests it may have outstanding at once (1 for RTU and for TCP without pipelining) */
  readonly maxInFlight: number;
  readonly connected: boolean;
  request(unitId: number, req: ModbusRequest, timeoutMs: number): Promise<ModbusOutcome>;
  /** starts connecting; reconnects with backoff forever until stop() */
  start(): void;
  stop(): Promise<void>;
  onConnectionChange(cb: (connected: boolean) => void): void;
  /** the wire's own counters (0 where a kind of wire has no such thing) */
  stats(): TransportStats;
}

export interface TransportStats {
  /** TCP: connections dropped because the stream was out of step */
  desyncs: number;
  /** RTU: bytes that arrived when no request was waiting for them (late answers, line noise) */
  strayBytes: number;
}

export interface ExceptionPolicy {
  quality: Quality;
  /** retry the same request (after the retry delay) */
  retry: boolean;
  /** counts as a device failure toward the circuit breaker */
  breaker: boolean;
}

/**
 * What each exception code means for the point and for the schedule (docs/drivers.md):
 * a code that says the request itself is wrong will not get better by retrying, a busy device
 * will, and a gateway that cannot reach its target is as good as an offline device.
 */
export function exceptionPolicy(code: number): ExceptionPolicy {
  switch (code) {
    case EXCEPTION.ILLEGAL_FUNCTION:
    case EXCEPTION.ILLEGAL_DATA_ADDRESS:
    case EXCEPTION.ILLEGAL_DATA_VALUE:
      return { quality: "config", retry: false, breaker: false };
    case EXCEPTION.ACKNOWLEDGE:
    case EXCEPTION.SERVER_DEVICE_BUSY:
      return { quality: "exception", retry: true, breaker: false };
    case EXCEPTION.GATEWAY_PATH_UNAVAILABLE:
    case EXCEPTION.GATEWAY_TARGET_FAILED:
      return { quality: "offline", retry: false, breaker: true };
    case EXCEPTION.SERVER_DEVICE_FAILURE:
    case EXCEPTION.NEGATIVE_ACKNOWLEDGE:
    case EXCEPTION.MEMORY_PARITY_ERROR:
    default:
      return { quality: "exception", retry: true, breaker: true };
  }
}

export const isRead = (r: ModbusRequest): r is Extract<ModbusRequest, { count: number }> => "count" in r;
