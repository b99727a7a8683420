// The simulated BMC's EventService (redfish-bmc.ts): its Server-Sent Events streams and its
// EventDestination subscriptions (DSP0266, "Eventing"), to which it POSTs each event with the
// headers the subscription asked for, as a BMC without SSE would push to a rack manager.
import type { ServerResponse } from "node:http";

export interface SimSubscription {
  id: string;
  destination: string;
  context: string;
  /** sent with every event; never given back on a GET, as DSP0266 has it */
  headers: Record<string, string>;
}

export class BmcEventService {
  private readonly streams = new Set<ServerResponse>();
  readonly subscriptions = new Map<string, SimSubscription>();
  /** events POSTed to subscribers, and those that found no answer or a refusal */
  pushes = 0;
  pushFailures = 0;
  private nextId = 1;

  constructor(private readonly subscriptionsPath: string) {}

  get streamCount(): number {
    return this.streams.size;
  }

  stream(res: ServerResponse): void {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
    res.write(": podwarden simulated BMC event stream\n\n");
    this.streams.add(res);
    res.on("close", () => this.streams.delete(res));
  }

  /** Ends every open stream, as a BMC reboot or a network blip would. */
  dropStreams(): void {
    for (const s of this.streams) s.destroy();
    this.streams.clear();
  }

  /** A new subscription from a POST's body, or why it is refused (400). */
  subscribe(body: Record<string, unknown> | null): SimSubscription | string {
    const dest = body?.Destination;
    if (typeof dest !== "string" || !/^https?:\/\/\S+$/.test(dest) || dest.length > 512) return "Destination: an http(s) URL";
    if (body?.Protocol !== "Redfish") return "Protocol: Redfish";
    const headers: Record<string, string> = {};
    const given = body.HttpHeaders;
    if (given !== undefined && !Array.isArray(given)) return "HttpHeaders: an array of objects";
    for (const h of (given ?? []) as unknown[]) {
      if (h === null || typeof h !== "object") return "HttpHeaders: an array of objects";
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") headers[k] = v;
    }
    const s: SimSubscription = { id: String(this.nextId++), destination: dest, context: typeof body.Context === "string" ? body.Context : "", headers };
    this.subscriptions.set(s.id, s);
    return s;
  }

  resource(id: string, path: string): Record<string, unknown> | null {
    const s = this.subscriptions.get(id);
    if (s === undefined) return null;
    return { "@odata.id": path, "@odata.type": "#EventDestination.v1_14_0.EventDestination", Id: id, Name: "Event subscription", Destination: s.destination, Protocol: "Redfish", Context: s.context, SubscriptionType: "RedfishEvent", HttpHeaders: null };
  }

  uriOf(s: SimSubscription): string {
    return `${this.subscriptionsPath}/${s.id}`;
  }

  /** Sends an event to every stream and every subscriber (each POST on its own, not awaited). */
  publish(id: number, body: unknown): void {
    const text = JSON.stringify(body);
    for (const s of this.streams) s.write(`id: ${id}\ndata: ${text}\n\n`);
    for (const sub of this.subscriptions.values()) {
      this.pushes++;
      void fetch(sub.destination, { method: "POST", headers: { "content-type": "application/json", ...sub.headers }, body: JSON.stringify({ ...(body as object), Context: sub.context }), signal: AbortSignal.timeout(2000) })
        .then((r) => {
          if (!r.ok) this.pushFailures++;
          return r.body?.cancel();
        })
        .catch(() => this.pushFailures++);
    }
  }

  close(): void {
    this.dropStreams();
  }
}
