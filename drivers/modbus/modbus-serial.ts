// modbus-serial is CommonJS: under NodeNext its default import is module.exports, whose typed
// `.default` is the client class. This one place unwraps it for the rest of the code, and holds
// the one workaround that needs the client's internals.
import lib from "modbus-serial";

export const ModbusClient = lib.default;
export type ModbusClient = InstanceType<typeof lib.default>;

/** The parts of modbus-serial 8's TCP client that its typings do not declare. */
interface ClientInternals {
  _transactions?: Record<number, unknown>;
  _port?: { _transactionIdWrite?: unknown };
}

/**
 * modbus-serial never deletes a finished transaction: its record (request, callbacks, and
 * through them our promise chain) stays in `_transactions` until the 8-bit id space wraps 256
 * requests later. At a 2 ms poll that is half a second: every record outlives V8's young
 * generation and is promoted, ~4 MB/s of old-space garbage on an 8-rack pod, which cost a full
 * mark-compact (a 3-7 ms pause on the leak path) every ~1.4 s.
 *
 * Issues a request through `issue` (which must call the client synchronously, as an async
 * function does up to its first await) and deletes that request's record once it has settled,
 * answered or timed out, if the slot still holds it. A late answer then finds no record, which
 * the client already treats as a stale transaction and ignores. If the internals are not what
 * this expects (another modbus-serial version), it only issues the request.
 */
export function issueAndRelease<T>(client: ModbusClient, issue: () => Promise<T>): Promise<T> {
  const c = client as unknown as ClientInternals;
  const table = c._transactions;
  const id = c._port?._transactionIdWrite;
  const p = issue();
  if (table === undefined || typeof id !== "number") return p;
  const record = table[id];
  const release = (): void => {
    if (record !== undefined && table[id] === record) delete table[id];
  };
  p.then(release, release);
  return p;
}

/** How many transaction records the client holds (tests: finished ones must not pile up). */
export function heldTransactions(client: ModbusClient): number {
  return Object.keys((client as unknown as ClientInternals)._transactions ?? {}).length;
}
