// Connection state and its listeners, shared by the TCP and RTU transports.
export abstract class ConnectionState {
  private connected_ = false;
  private readonly listeners: ((connected: boolean) => void)[] = [];

  get connected(): boolean {
    return this.connected_;
  }

  onConnectionChange(cb: (connected: boolean) => void): void {
    this.listeners.push(cb);
  }

  protected setConnected(c: boolean): void {
    if (c === this.connected_) return;
    this.connected_ = c;
    for (const l of this.listeners) l(c);
  }
}
