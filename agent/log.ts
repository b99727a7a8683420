// Logging: pino, JSON lines on stdout, a child logger per module with its own level.
// Read it with `journalctl -u podwarden -o cat | npx pino-pretty` (docs/operations.md).
import { pino, type Logger, type DestinationStream } from "pino";

import type { LogConfig } from "./log-schema.js";

export type { Logger };
export type { LogConfig };

export class Logs {
  readonly root: Logger;
  private readonly destination: DestinationStream;

  constructor(
    private readonly cfg: LogConfig,
    base: Record<string, string>,
    destination?: DestinationStream,
  ) {
    this.destination = destination ?? pino.destination({ dest: 1, sync: false });
    this.root = pino({ level: cfg.level, base, timestamp: pino.stdTimeFunctions.isoTime }, this.destination);
  }

  /**
   * Lines another thread's logger formatted (the control plane's: agent/plane/), written to this
   * one's destination, so that one writer owns stdout and lines never interleave mid-line.
   */
  writeRaw(text: string): void {
    this.destination.write(text);
  }

  /** The logger of one module (agent, control, drivers, supervisor, uplink, ...). */
  module(name: string): Logger {
    const child = this.root.child({ module: name });
    const level = this.cfg.modules[name];
    if (level !== undefined) child.level = level;
    return child;
  }

  flush(): void {
    this.root.flush();
  }
}
