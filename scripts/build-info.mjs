// Written after the TypeScript build: dist/build-info.json, the commit the build was made from,
// for `podwarden --version` (issue #51: it printed the version only, and two builds of one
// version could not be told apart). Plain JavaScript: it runs before anything of dist exists to
// import. Outside a git checkout (a source tarball) the commit is null and --version says so.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const git = (...args) => {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
};
const commit = git("rev-parse", "HEAD");
const dirty = commit === null ? false : git("status", "--porcelain", "--untracked-files=no") !== "";
writeFileSync("dist/build-info.json", `${JSON.stringify({ commit, dirty })}\n`);
