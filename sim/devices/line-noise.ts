// Electrical noise on a serial line, as a Modbus RTU master sees it: a bit flipped anywhere (the
// CRC no longer matches), a frame cut short, a byte of garbage before or after it. The
// simulator's RTU front damages a device's answers with it (the `lineNoisePct` fault), and the
// RTU driver's test relays answers through it: no damaged frame may be taken for a good one.
import type { Prng } from "../prng.js";

/** `frame`, damaged in one of the four ways, chosen by `rng`. */
export function damageFrame(frame: Buffer, rng: Prng): Buffer {
  const out = Buffer.from(frame);
  switch (rng.int(0, 3)) {
    case 0: // one bit flipped anywhere
      out[rng.int(0, out.length - 1)] ^= 1 << rng.int(0, 7);
      return out;
    case 1: // cut short
      return out.subarray(0, rng.int(1, Math.max(1, out.length - 1)));
    case 2: // garbage before the frame
      return Buffer.concat([Buffer.from([rng.int(0, 255), rng.int(0, 255)]), out]);
    default: // garbage after the frame
      return Buffer.concat([out, Buffer.from([rng.int(0, 255)])]);
  }
}
