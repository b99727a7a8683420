// A throw-away PKI for TLS tests: EC keys and certificates made with openssl in a temporary
// directory, removed by the test that made it.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "./processes.js";
import { tempDir } from "./temp-dirs.js";

export class TestPki {
  private constructor(readonly dir: string) {}

  static create(): TestPki {
    return new TestPki(tempDir("pw-tls-"));
  }

  /** Path of a file in the PKI directory: `<name>.pem` (certificate) or `<name>.key`. */
  file(name: string): string {
    return join(this.dir, name);
  }

  /** A self-signed CA: `<name>.pem` and `<name>.key`. */
  async ca(name: string): Promise<void> {
    await this.openssl(["req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", this.file(`${name}.key`), "-out", this.file(`${name}.pem`), "-days", "2", "-subj", `/CN=${name}`]);
  }

  /**
   * A certificate for `cn` signed by CA `caName`, with a subjectAltName such as "IP:127.0.0.1" for
   * a server, valid for `days` (negative: it expired before it was issued).
   */
  async issue(name: string, cn: string, caName: string, san?: string, days = 2): Promise<void> {
    await this.openssl(["req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", this.file(`${name}.key`), "-out", this.file(`${name}.csr`), "-subj", `/CN=${cn}`]);
    const ext = this.file(`${name}.ext`);
    writeFileSync(ext, san === undefined ? "basicConstraints=CA:FALSE\n" : `subjectAltName=${san}\n`);
    await this.openssl(["x509", "-req", "-in", this.file(`${name}.csr`), "-CA", this.file(`${caName}.pem`), "-CAkey", this.file(`${caName}.key`), "-CAcreateserial", "-out", this.file(`${name}.pem`), "-days", String(days), "-extfile", ext]);
  }

  /** mosquitto.conf lines for a TLS listener with this PKI's certificate `broker` that requires client certificates from CA `ca`. */
  mosquittoTls(broker = "broker"): string[] {
    return [`cafile ${this.file("ca.pem")}`, `certfile ${this.file(`${broker}.pem`)}`, `keyfile ${this.file(`${broker}.key`)}`, "require_certificate true"];
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async openssl(args: string[]): Promise<void> {
    const r = await run("openssl", args);
    if (r.code !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`);
  }
}

/** A PKI with CA `ca`, a foreign `rogue-ca`, a `broker` certificate for 127.0.0.1 and client certificates for `clients` (name = CN). */
export async function brokerPki(clients: string[]): Promise<TestPki> {
  const pki = TestPki.create();
  await pki.ca("ca");
  await pki.ca("rogue-ca");
  await pki.issue("broker", "127.0.0.1", "ca", "IP:127.0.0.1");
  for (const c of clients) await pki.issue(c, c, "ca");
  return pki;
}
