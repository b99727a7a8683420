// A Modbus RTU line's framing and timing, as the Modbus over Serial Line specification (V1.02)
// has them: every character is 11 bits (a start bit, 8 data bits, a parity bit, a stop bit; or,
// with no parity, two stop bits), even parity is the default every device must offer, and a
// frame ends at 3.5 characters of silence (1.75 ms at any rate above 19,200 baud). Many devices
// ship 8N1 or 8N2, so each bus says its own; 8 data bits always, as RTU carries binary bytes
// (7 is Modbus ASCII's).

export type Parity = "none" | "even" | "odd";

export interface SerialFraming {
  dataBits: 8;
  parity: Parity;
  stopBits: 1 | 2;
}

/** The framing as devices' manuals write it: 8E1, 8N2. */
export function framingName(f: SerialFraming): string {
  return `${f.dataBits}${f.parity === "none" ? "N" : f.parity === "even" ? "E" : "O"}${f.stopBits}`;
}

/** Bits on the wire per character: start, data, parity, stop. */
export function characterBits(f: SerialFraming): number {
  return 1 + f.dataBits + (f.parity === "none" ? 0 : 1) + f.stopBits;
}

/** t3.5, the silence that ends a frame, ms: 3.5 characters, and 1.75 ms above 19,200 baud (the spec's fixed value there). */
export function frameGapMs(baudRate: number, f: SerialFraming): number {
  if (baudRate > 19_200) return 1.75;
  return (3.5 * characterBits(f) * 1000) / baudRate;
}

/**
 * The silence after which a partial answer is taken as truncated, ms: t3.5 from the rate and
 * framing, rounded up to a whole ms, plus the adapter's delivery latency. A USB adapter hands
 * the bytes of one frame over in chunks (an FTDI chip's latency timer is 16 ms by default), and a
 * gap between two chunks is not the line's silence; an on-board UART has none.
 */
export function interFrameMs(baudRate: number, f: SerialFraming, latencyMs: number): number {
  return Math.ceil(frameGapMs(baudRate, f)) + latencyMs;
}
