// The Node.js versions podwarden runs on, as package.json's engines field says (>= 20.19 on
// the 20 line, or 22 and later): checked first thing by the CLI. Debian 12's own nodejs is 18,
// and an install on it failed later and less clearly (issue #51).

/** Why `version` (process.versions.node) cannot run podwarden, or null if it can. */
export function nodeVersionProblem(version: string): string | null {
  const [major, minor] = version.split(".").map(Number);
  if (major > 21 || (major === 20 && minor >= 19)) return null;
  return `podwarden needs Node.js 20.19 or later on the 20 line, or 22 or later; this is ${version} (Debian 12's own nodejs is 18: install Node.js 20 or 22 from NodeSource or the Node.js binaries, docs/operations.md)`;
}
