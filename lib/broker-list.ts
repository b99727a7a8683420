// Which broker to try next: an ordered list of URLs, each host name expanded to every address it
// resolves to. The uplink and the Sparkplug edge node each keep one, so a pod rides a clustered
// broker (any node will do) or a list of site brokers without a fleet protocol of its own.
//
// The pod stays on a broker while it works. When a connection is lost, refused, or given up as
// silent, the next attempt goes to the next address: the next of the same name's addresses, then
// the next URL's, wrapping round to the first. A name is resolved again each time the list comes
// back to it, so a DNS change is seen within one round. A name that does not resolve counts as one
// unreachable address: the attempt fails and the list moves on.
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";

/** One connection attempt's target. */
export interface BrokerTarget {
  /** the URL to connect to: the configured one with its host replaced by one resolved address */
  url: string;
  /** the configured URL this address came from (as written: redact before logging) */
  configured: string;
  /** the host name as configured, for TLS's server name check, when the URL now carries an address */
  servername?: string;
}

export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

export class BrokerList {
  private entry = 0;
  private addr = 0;
  private targets: BrokerTarget[] = [];
  private moves = 0;

  constructor(
    private readonly urls: readonly string[],
    private readonly lookup: Lookup = systemLookup,
  ) {
    if (urls.length === 0) throw new Error("no broker URL");
  }

  /** The target for the next attempt (resolving the current URL's name when the list reaches it). */
  async current(): Promise<BrokerTarget> {
    if (this.targets.length === 0) this.targets = await this.expand(this.urls[this.entry]);
    return this.targets[this.addr];
  }

  /** The attempt on the current target failed, or its connection was lost: move on. */
  failed(): void {
    this.moves++;
    this.addr++;
    if (this.addr < this.targets.length) return;
    this.addr = 0;
    this.targets = [];
    this.entry = (this.entry + 1) % this.urls.length;
  }

  /** How many times the list has moved on since it was made. */
  get switches(): number {
    return this.moves;
  }

  private async expand(configured: string): Promise<BrokerTarget[]> {
    const u = new URL(configured);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) !== 0) return [{ url: configured, configured }];
    let addresses: string[];
    try {
      addresses = await this.lookup(host);
    } catch {
      addresses = [];
    }
    // unresolvable: one target that will fail on its own, with the resolver's error in the log
    if (addresses.length === 0) return [{ url: configured, configured }];
    return addresses.map((a) => {
      const v = new URL(configured);
      v.hostname = isIP(a) === 6 ? `[${a}]` : a;
      return { url: v.toString(), configured, servername: host };
    });
  }
}
