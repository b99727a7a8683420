// Ed25519 signatures on commands (node:crypto, no extra dependency).
//
// A command travels as an envelope {keyId, signature, body}, where body is the command's JSON
// *text* and the signature covers the UTF-8 bytes of a fixed domain prefix, the key id and a
// newline, then that text. The key id is signed because the replay guard counts sequence numbers
// per key id: unsigned, an envelope relabelled with another id of the same key would start a
// fresh count and replay.
// Signing the exact text avoids JSON canonicalisation (two serialisers never disagree about what
// was signed), and the prefix keeps a podwarden command signature from being valid for anything
// else the same key might sign.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";

export const SIGNING_DOMAIN = "podwarden-command-v2\n";

export interface CommandEnvelope {
  keyId: string;
  /** base64 Ed25519 signature over SIGNING_DOMAIN + keyId + "\n" + body */
  signature: string;
  /** the command as JSON text */
  body: string;
}

// a key id is a name (no newline: see commands/schema.ts), so the newline ends it unambiguously
function signedBytes(keyId: string, body: string): Buffer {
  return Buffer.from(`${SIGNING_DOMAIN}${keyId}\n${body}`, "utf8");
}

/**
 * A public key from config: PEM (SPKI), or the raw 32-byte key in base64. Throws with a reason
 * if it is neither, or not Ed25519.
 */
export function parsePublicKey(text: string): KeyObject {
  const t = text.trim();
  let key: KeyObject;
  if (t.startsWith("-----BEGIN")) {
    key = createPublicKey(t);
  } else {
    const raw = Buffer.from(t, "base64");
    if (raw.length !== 32 || raw.toString("base64").replace(/=+$/, "") !== t.replace(/=+$/, "")) throw new Error("not a PEM public key nor 32 bytes of base64");
    key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
  }
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`an Ed25519 key is needed, this is ${key.asymmetricKeyType ?? "unknown"}`);
  return key;
}

export function parsePrivateKey(pem: string): KeyObject {
  const key = createPrivateKey(pem);
  if (key.asymmetricKeyType !== "ed25519") throw new Error(`an Ed25519 key is needed, this is ${key.asymmetricKeyType ?? "unknown"}`);
  return key;
}

/** A new key pair: the private key as PEM (PKCS#8), the public key as PEM and as raw base64. */
export function generateCommandKey(): { privatePem: string; publicPem: string; publicRaw: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return {
    privatePem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
    publicPem: publicKey.export({ format: "pem", type: "spki" }).toString(),
    publicRaw: Buffer.from(jwk.x ?? "", "base64url").toString("base64"),
  };
}

export function signEnvelope(body: string, keyId: string, privateKey: KeyObject): CommandEnvelope {
  return { keyId, signature: sign(null, signedBytes(keyId, body), privateKey).toString("base64"), body };
}

export function verifyEnvelope(e: CommandEnvelope, publicKey: KeyObject): boolean {
  const sig = Buffer.from(e.signature, "base64");
  // one signature, one spelling: the last base64 digit carries 2 unused bits that decoding
  // ignores, so only the canonical encoding is accepted (found by the command fuzzer)
  if (sig.length !== 64 || sig.toString("base64") !== e.signature) return false;
  try {
    return verify(null, signedBytes(e.keyId, e.body), publicKey, sig);
  } catch {
    return false;
  }
}
