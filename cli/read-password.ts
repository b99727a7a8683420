// `podwarden hmi-user`'s password: typed at a terminal without echo, or piped.
import { UsageError } from "./usage-error.js";

/** A password from stdin: typed at a terminal without echo, or the first line of what is piped. */
export async function readPassword(): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    let text = "";
    for await (const chunk of input) {
      text += String(chunk);
      if (text.includes("\n") || text.length > 1024) break;
    }
    return text.split(/\r?\n/)[0];
  }
  process.stderr.write("password: ");
  input.setRawMode(true);
  input.resume();
  return await new Promise<string>((resolve, reject) => {
    let typed = "";
    const done = (value: string | null): void => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write("\n");
      if (value === null) reject(new UsageError("cancelled"));
      else resolve(value);
    };
    const onData = (d: Buffer): void => {
      for (const ch of d.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return done(typed);
        if (ch === "\u0003") return done(null);
        if (ch === "\u007f") typed = typed.slice(0, -1);
        else if (typed.length < 256) typed += ch;
      }
    };
    input.on("data", onData);
  });
}
