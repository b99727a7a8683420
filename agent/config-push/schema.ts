// The config push's config section (`configPush`): whether this pod takes a config from mission
// control at all, and how long a pushed one is on trial. Its type is derived from the schema.
import { bool, int, obj, type Infer } from "../../lib/schema-builders.js";

export const CONFIG_PUSH_SCHEMA = obj(
  {
    enabled: bool(
      false,
      "take a whole config pushed by mission control (the signed command `config`, engineer keys only: `podwarden fleet config push`); off, every push is refused and the file given with -c is the only config (docs/fleet.md, Config pushed to a fleet)",
    ),
    healthWindowS: int(
      1,
      3600,
      120,
      "how long a pushed config is on trial before it is kept: control healthy at the end, every device that answered before the push answering, no Critical alarm that did not stand before it, and the uplink connected if it was; else the config that ran before is put back. A push may ask for another window, s",
    ),
  },
  "configs pushed by mission control, each on trial before it is kept (docs/fleet.md, Config pushed to a fleet)",
);

export type ConfigPushConfig = Infer<typeof CONFIG_PUSH_SCHEMA>;
