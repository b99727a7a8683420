// Setpoint leases: a setpoint from upstream holds only for its lease, then the loop falls back
// to the local default. A mission control that goes quiet cannot leave a pod on a setpoint
// nobody is watching.

export interface LeasedSetpoint {
  loop: number;
  value: number;
  expiresAtMs: number;
  by: string;
}

export class SetpointLeases {
  private readonly leases = new Map<number, LeasedSetpoint>();

  set(loop: number, value: number, leaseMs: number, nowMs: number, by: string): LeasedSetpoint {
    const l = { loop, value, expiresAtMs: nowMs + leaseMs, by };
    this.leases.set(loop, l);
    return l;
  }

  /** Removes and returns the leases that have expired. */
  expire(nowMs: number): LeasedSetpoint[] {
    const out: LeasedSetpoint[] = [];
    for (const [loop, l] of this.leases) {
      if (nowMs >= l.expiresAtMs) {
        this.leases.delete(loop);
        out.push(l);
      }
    }
    return out;
  }

  get(loop: number): LeasedSetpoint | undefined {
    return this.leases.get(loop);
  }

  all(): LeasedSetpoint[] {
    return [...this.leases.values()];
  }
}
