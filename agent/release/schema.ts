// The release health window's config section (`release`): its schema, and its type derived from it.
import { num, obj, type Infer } from "../../lib/schema-builders.js";

export const RELEASE_SCHEMA = obj(
  {
    healthWindowS: num(
      1,
      3600,
      120,
      "after a start on a version (or build) other than the last good one, how long the daemon watches itself before it records that version good: control healthy at the end, every device that answered under the last good version answering, and no Critical alarm the last good run did not have. A window that fails raises the Critical alarm release:health-window with why, and `podwarden rollback` returns to the last good version (docs/operations.md), s",
    ),
  },
  "the health window after an upgrade (docs/operations.md, Upgrades that roll back)",
);

export type ReleaseConfig = Infer<typeof RELEASE_SCHEMA>;
