// Leases on a loop's remote values: a setpoint from upstream, or an Override output, holds only
// for its lease; then the loop falls back (to the local default setpoint, or to the mode the
// operator at the pod left it in). A mission control that goes quiet cannot leave a pod on a
// value nobody is watching.

/**
 * Who holds an Override that `io force` made (a loop check, docs/commissioning.md): the requester,
 * marked, so that the end of the maintenance the force needed can end it too.
 */
export const forceBy = (by: string, output: string): string => `${by} (io force ${output})`;
export const isForce = (by: string): boolean => / \(io force [^()]+\)$/.test(by);

export interface LeasedValue {
  loop: number;
  value: number;
  expiresAtMs: number;
  by: string;
}

export class LoopLeases {
  private readonly leases = new Map<number, LeasedValue>();

  set(loop: number, value: number, leaseMs: number, nowMs: number, by: string): LeasedValue {
    const l = { loop, value, expiresAtMs: nowMs + leaseMs, by };
    this.leases.set(loop, l);
    return l;
  }

  /** Removes and returns the leases that have expired. */
  expire(nowMs: number): LeasedValue[] {
    const out: LeasedValue[] = [];
    for (const [loop, l] of this.leases) {
      if (nowMs >= l.expiresAtMs) {
        this.leases.delete(loop);
        out.push(l);
      }
    }
    return out;
  }

  delete(loop: number): void {
    this.leases.delete(loop);
  }

  get(loop: number): LeasedValue | undefined {
    return this.leases.get(loop);
  }

  all(): LeasedValue[] {
    return [...this.leases.values()];
  }
}
