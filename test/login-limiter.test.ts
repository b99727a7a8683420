// The limit on failed logins (agent/hmi/login-limiter.ts): per address, per user and in all, an
// attempt's place taken before its password is looked at, and no ceiling that locks out a user
// with the right password from an address known for it (issue #54).
import { describe, expect, it } from "vitest";
import { LoginLimiter, type LoginTicket } from "../agent/hmi/login-limiter.js";

const limits = { perSource: 2, perUser: 3, total: 4, windowMs: 60_000 };
const take = (l: LoginLimiter, source: string, user: string, at: number): LoginTicket => {
  const r = l.reserve(source, user, at);
  if (!("ticket" in r)) throw new Error(`${user}@${source} should have a place at ${at}, waits ${r.waitMs} ms`);
  return r.ticket;
};

describe("the login limiter", () => {
  it("takes an attempt's place before its password is looked at, and gives it back only when right or never looked at", () => {
    const l = new LoginLimiter(limits);
    const a = take(l, "a", "alice", 0);
    take(l, "a", "bob", 1);
    // two in flight from a, neither answered yet: a third waits, before any scrypt
    expect(l.reserve("a", "carol", 2)).toEqual({ waitMs: 59_998 });
    l.release(a); // never looked at
    take(l, "a", "carol", 3);
    expect("waitMs" in l.reserve("a", "dave", 4)).toBe(true);
    take(l, "a", "dave", 60_001); // the minute has passed for the first
  });

  it("limits failures per address, per user (from anywhere) and in all, for the window", () => {
    const l = new LoginLimiter(limits);
    take(l, "a", "alice", 0);
    take(l, "b", "alice", 10);
    take(l, "c", "alice", 20);
    expect(l.reserve("d", "alice", 30)).toEqual({ waitMs: 59_970 }); // three for alice, from three addresses
    take(l, "d", "bob", 40); // four in all
    expect(l.reserve("e", "carol", 50)).toEqual({ waitMs: 59_950 });
    expect("ticket" in l.reserve("e", "carol", 60_001)).toBe(true);
  });

  it("cannot lock out a user with the right password from an address the user has logged in from", () => {
    const l = new LoginLimiter(limits);
    l.succeeded(take(l, "10.0.0.5", "alice", 0));
    // an attacker elsewhere fills every ceiling: per user (alice), and in all
    for (let i = 0; i < 3; i++) take(l, `192.0.2.${i}`, "alice", 100 + i);
    take(l, "192.0.2.3", "bob", 103);
    expect("waitMs" in l.reserve("192.0.2.9", "alice", 200)).toBe(true);
    expect("waitMs" in l.reserve("10.0.0.6", "alice", 200)).toBe(true); // a new address of hers is held
    // from alice's own address, another name (a guesser sharing her laptop) is held too
    expect("waitMs" in l.reserve("10.0.0.5", "root", 300)).toBe(true);
    // alice from her address still gets a place, and her right password logs her in
    l.succeeded(take(l, "10.0.0.5", "alice", 400));
    // held only by her own failures from there: a guesser at her address with her name is
    take(l, "10.0.0.5", "alice", 500);
    take(l, "10.0.0.5", "alice", 501);
    expect(l.reserve("10.0.0.5", "alice", 502)).toEqual({ waitMs: 59_998 });
  });

  it("takes configured addresses and blocks as known for every user; refuses one that is not an address", () => {
    const l = new LoginLimiter(limits, ["10.1.0.0/16", "::1"]);
    for (let i = 0; i < 4; i++) take(l, `192.0.2.${i}`, `u${i}`, i);
    expect("waitMs" in l.reserve("192.0.2.50", "alice", 10)).toBe(true);
    expect("ticket" in l.reserve("10.1.2.3", "alice", 10)).toBe(true);
    expect("ticket" in l.reserve("::ffff:10.1.2.4", "alice", 10)).toBe(true); // IPv4 on a dual-stack socket
    expect("ticket" in l.reserve("::1", "alice", 10)).toBe(true);
    expect(l.isKnown("unknown", "alice")).toBe(false);
    expect(() => new LoginLimiter(limits, ["10.0.0.300"])).toThrow(/not an IP address or CIDR block/);
    expect(() => new LoginLimiter(limits, ["10.0.0.0/40"])).toThrow(/not an IP address/);
  });
});
