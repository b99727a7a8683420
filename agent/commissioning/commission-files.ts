// Where a commissioning record is kept: `<stateDir>/commissioning/commission-<time>.json` and
// `.html`, each written to a temporary file, synced and renamed, so a crash leaves the whole
// record or none, with the state directory's modes (0700 folders, 0600 files: the service's
// user alone). Written by the service plane (the admin socket), off the control plane.
import { mkdir, open, rename } from "node:fs/promises";
import { join } from "node:path";
import type { PodConfig } from "../../pod/config.js";
import type { IoRow } from "../ops/io-list.js";
import { packageVersion } from "../version.js";
import { commissionHtml, commissionReport, type CommissionReport } from "./commission-report.js";

export interface WrittenRecord {
  json: string;
  html: string;
  summary: CommissionReport["summary"];
  sha256: string;
  /** the points and outputs not ok, with why */
  problems: { id: string; why: string }[];
}

async function writeSynced(file: string, text: string): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}

export async function writeCommissionRecord(stateDir: string, c: Pick<PodConfig, "racks" | "cdu"> & { site: string; pod: string }, configHash: string, rows: readonly IoRow[], by: string): Promise<WrittenRecord> {
  const at = new Date().toISOString();
  const report = commissionReport(c, rows, { site: c.site, pod: c.pod, version: packageVersion(), configHash, at, by });
  const dir = join(stateDir, "commissioning");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const base = join(dir, `commission-${at.replace(/[:.]/g, "-")}`);
  await writeSynced(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  await writeSynced(`${base}.html`, commissionHtml(report));
  const problems = [...report.points, ...report.outputs].filter((x) => !x.ok).map((x) => ({ id: x.id, why: x.why }));
  return { json: `${base}.json`, html: `${base}.html`, summary: report.summary, sha256: report.sha256, problems };
}
