// Commands from mission control: request/<command> in, response/<command> out (docs/mqtt.md).
//
// Every request is authorised (commands/authorizer.ts), checked against the configured envelope
// and carried out (commands/executor.ts); every outcome is answered and audited as an event.
// Rejections are rate-limited: beyond rejectionAuditPerS they are counted and summarised once a
// second instead of being answered one by one, so a flood of junk cannot turn into a flood of
// responses and events (the spool and the broker stay for what matters).
//
// A command delivered twice (mission control re-sent it after a broker failover took its
// response, or a QoS 1 redelivery) executes once: the replay guard refuses the copy, and the copy
// of a command executed since start gets the first one's answer again, marked duplicate, rather
// than a bare "replayed" (which would leave the sender unsure whether it ran). The answers are
// kept for the last RECENT_ANSWERS commands, in memory: after a restart a copy is "replayed".
//
// Requests themselves are rate-limited first, before anything is parsed or verified: beyond
// maxPerS a second they are dropped unread. An Ed25519 verification costs ~50-100 µs of the main
// thread, where the leak polls run: 10,000 forged requests a second took leak-to-isolation from
// p50 2.4 ms to 52 ms and p99 to 153 ms (`npm run bench -- --only leak`, BENCHMARKS.md).
import type { IClientPublishOptions, IPublishPacket } from "mqtt";
import { CommandAuthorizer, type Rejected } from "../commands/authorizer.js";
import type { Outcome } from "../commands/executor.js";
import { COMMANDS, isCommandName, type CommandBody, type CommandName } from "../commands/schema.js";
import type { PodCommands, PodIdentity } from "../pod-api.js";
import type { Logger } from "../log.js";
import type { UplinkConfig } from "./schema.js";

type Publish = (topic: string, body: string, opts: IClientPublishOptions) => void;

/** Commands the daemon's service plane carries out itself, not the pod's executor (a pushed config). */
export type LocalCommands = Partial<Record<CommandName, (body: CommandBody, by: string) => Promise<Outcome>>>;

interface ReplyTo {
  topic: string;
  correlationData?: Buffer;
}

export class CommandService {
  private authorizer: CommandAuthorizer | null = null;
  private tokens: number;
  private suppressed = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly counts = { accepted: 0, rejected: 0, suppressed: 0, dropped: 0, duplicates: 0 };
  /** the answers to the last commands executed, by key id, seq and transaction */
  private readonly answered = new Map<string, Record<string, unknown>>();
  /** requests still to be taken this second */
  private intake: number;
  /** requests dropped unread since the last summary */
  private droppedSinceSummary = 0;
  problem: string | null = null;

  constructor(
    private readonly agent: () => PodCommands & { readonly identity: PodIdentity },
    private readonly c: UplinkConfig["commands"],
    private readonly log: Logger,
    private readonly publish: Publish,
    private readonly local: LocalCommands = {},
  ) {
    this.tokens = c.rejectionAuditPerS;
    this.intake = c.maxPerS;
  }

  start(): void {
    if (!this.c.enabled) return;
    const a = this.agent();
    const id = a.identity;
    this.authorizer = new CommandAuthorizer({ site: id.site, pod: id.pod, keys: this.c.keys, maxTtlS: this.c.maxTtlS, clockSkewS: this.c.clockSkewS, stateDir: id.stateDir });
    // no keys is a read-only uplink, a choice rather than a fault; a key set that cannot be
    // protected against replay is a fault
    this.problem = this.c.keys.length === 0 ? null : this.authorizer.problem;
    if (this.c.keys.length === 0) this.log.info("no command keys configured: the uplink is read-only (every command is refused)");
    this.timer = setInterval(() => this.refill(), 1000);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  names(): readonly CommandName[] {
    return COMMANDS;
  }

  stats(): { accepted: number; rejected: number; suppressed: number; dropped: number; duplicates: number } {
    return { ...this.counts };
  }

  private refill(): void {
    this.tokens = this.c.rejectionAuditPerS;
    this.intake = this.c.maxPerS;
    if (this.droppedSinceSummary > 0) {
      this.agent().audit({ action: "*", by: "unknown", result: "dropped", reason: `requests beyond ${this.c.maxPerS} a second, dropped unread`, suppressed: this.droppedSinceSummary });
      this.log.warn({ dropped: this.droppedSinceSummary, maxPerS: this.c.maxPerS }, "command requests beyond the rate dropped unread");
      this.droppedSinceSummary = 0;
    }
    if (this.suppressed > 0) {
      this.agent().audit({ action: "*", by: "unknown", result: "rejected", reason: "rejections beyond the audit rate, not answered one by one", suppressed: this.suppressed });
      this.suppressed = 0;
    }
  }

  /** Handles one message from request/<command>; `sub` is the topic below the pod's base. */
  handle(sub: string, payload: Buffer, packet: IPublishPacket): void {
    if (this.authorizer === null || !sub.startsWith("request/")) return;
    // the rate first: nothing of a request over it is read, let alone verified
    if (this.intake <= 0) {
      this.counts.dropped++;
      this.droppedSinceSummary++;
      return;
    }
    this.intake--;
    const name = sub.slice("request/".length);
    const base = packetBase(packet.topic, sub);
    const props = packet.properties;
    // MQTT 5: answer where the requester asked, if that is inside this pod's tree (the broker's
    // ACL lets a pod publish nowhere else), echoing its correlation data
    const asked = props?.responseTopic;
    const known = isCommandName(name);
    const replyTo: ReplyTo = {
      topic: asked !== undefined && isReplyTopic(asked, base) ? asked : `${base}response/${known ? name : "unknown"}`,
      ...(props?.correlationData === undefined || props.correlationData.length > MAX_CORRELATION_BYTES ? {} : { correlationData: props.correlationData }),
    };
    // an unknown name is the sender's text: it reaches the audit trail and the log only cut short
    if (!known) return this.reject({ ok: false, code: "malformed", reason: `no command "${clip(name)}"` }, "unknown", replyTo);
    // the verdict on an authentic command waits for its seq to be on disk (off the event loop)
    this.authorizer.check(name, payload, Date.now()).then(
      (verdict) => {
        if (!verdict.ok) return this.reject(verdict, name, replyTo);
        const { body, keyId } = verdict;
        const key = answerKey(keyId, body.seq, body.transaction);
        const by = `key ${keyId}`;
        const local = this.local[body.command];
        (local === undefined ? this.agent().execute(body, by) : local(body, by)).then(
          (outcome) => this.answer(name, body.transaction, keyId, outcome, replyTo, key),
          (err: Error) => this.answer(name, body.transaction, keyId, { status: "rejected", code: "unavailable", reason: `failed: ${err.message}` }, replyTo, key),
        );
      },
      // not expected (every check returns a verdict), but a command must never go unanswered
      (err: Error) => this.reject({ ok: false, code: "unavailable", reason: `cannot check the command: ${err.message}` }, name, replyTo),
    );
  }

  private answer(name: CommandName, transaction: string, keyId: string, o: Outcome, replyTo: ReplyTo, key: string): void {
    const ok = o.status === "ok";
    if (ok) this.counts.accepted++;
    else this.counts.rejected++;
    this.agent().audit({ action: name, ...(o.rack === undefined ? {} : { rack: o.rack }), by: `key ${keyId}`, result: ok ? "accepted" : o.code, transaction, ...(ok ? {} : { reason: o.reason }) });
    this.log.info({ command: name, transaction, keyId, result: ok ? "accepted" : o.code }, "command");
    const body = ok ? { status: "ok", transaction, command: name, data: o.data ?? null, error: null } : { status: "rejected", transaction, command: name, data: null, error: { code: o.code, message: o.reason } };
    this.answered.set(key, body);
    if (this.answered.size > RECENT_ANSWERS) this.answered.delete(this.answered.keys().next().value as string);
    this.respond(replyTo, body);
  }

  private reject(r: Omit<Rejected, "check">, name: string, replyTo: ReplyTo): void {
    // an authentic copy of a command already carried out: its first answer, again (within the
    // same answer rate as a rejection, so a flood of copies is no flood of answers)
    const first = r.code === "replayed" && r.keyId !== undefined && r.seq !== undefined && r.transaction !== undefined ? this.answered.get(answerKey(r.keyId, r.seq, r.transaction)) : undefined;
    if (first === undefined) this.counts.rejected++;
    else this.counts.duplicates++;
    if (this.tokens < 1) {
      this.suppressed++;
      this.counts.suppressed++;
      return;
    }
    this.tokens--;
    if (first !== undefined) {
      this.agent().audit({ action: name, by: `key ${r.keyId}`, result: "duplicate", transaction: r.transaction, reason: "a copy of a command already carried out: not carried out again, answered as the first was" });
      return this.respond(replyTo, { ...first, duplicate: true });
    }
    this.agent().audit({ action: name, by: r.keyId === undefined ? "unknown" : `key ${r.keyId} (claimed)`, result: r.code, reason: r.reason, ...(r.transaction === undefined ? {} : { transaction: r.transaction }) });
    this.log.warn({ command: name, code: r.code, reason: r.reason }, "command rejected");
    this.respond(replyTo, { status: "rejected", transaction: r.transaction ?? null, command: name, data: null, error: { code: r.code, message: r.reason } });
  }

  private respond(replyTo: ReplyTo, body: Record<string, unknown>): void {
    this.publish(replyTo.topic, JSON.stringify({ ...body, timestamp: new Date().toISOString() }), {
      qos: 1,
      ...(replyTo.correlationData === undefined ? {} : { properties: { correlationData: replyTo.correlationData } }),
    });
  }
}

/** How many commands' answers are kept to answer a copy (a few minutes of a busy console). */
const RECENT_ANSWERS = 256;
const answerKey = (keyId: string, seq: number, transaction: string): string => `${keyId}\n${seq}\n${transaction}`;

/** Correlation data longer than this is not echoed (MQTT allows 64 KiB; a console needs a few bytes). */
const MAX_CORRELATION_BYTES = 256;
/** The longest reply topic used, and the most of an unknown command name audited or logged. */
const MAX_REPLY_TOPIC_CHARS = 512;
const MAX_NAME_CHARS = 64;

/** A sender's text, at most MAX_NAME_CHARS of it. */
const clip = (s: string): string => (s.length > MAX_NAME_CHARS ? `${s.slice(0, MAX_NAME_CHARS)}… (${s.length} characters)` : s);

/**
 * A requester's MQTT 5 responseTopic is used only if the pod may and can publish there: inside
 * its own response/ tree (the broker's ACL allows nothing else), with no wildcard and no NUL (a
 * PUBLISH to a wildcard topic is a protocol error: the broker drops the connection, so an
 * unsigned request could flap the uplink), and of bounded length. Anything else gets the
 * default reply topic.
 */
export function isReplyTopic(topic: string, base: string): boolean {
  return topic.startsWith(`${base}response/`) && topic.length > `${base}response/`.length && topic.length <= MAX_REPLY_TOPIC_CHARS && !topic.includes("+") && !topic.includes("#") && !topic.includes("\0");
}

/** The pod's base topic, from a request's full topic and the part below the base. */
function packetBase(topic: string, sub: string): string {
  return topic.slice(0, topic.length - sub.length);
}
