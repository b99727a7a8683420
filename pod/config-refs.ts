// The config's references and names, as schemas: a point id, an output id, a name. The sections
// of pod/config.ts and pod/cdu-config.ts share them.
import { str, type Schema } from "../lib/schema-builders.js";

export const ident = (description: string): Schema<string> => str(description, { pattern: "^[A-Za-z0-9][A-Za-z0-9_-]*$" });
export const pointRef = (description: string): Schema<string> => str(`point id (device.point or an MQTT ingest id): ${description}`, { pattern: "^[A-Za-z][A-Za-z0-9_.-]*$" });
export const outputRef = (description: string): Schema<string> => str(`Modbus output id (device.output): ${description}`, { pattern: "^[A-Za-z][A-Za-z0-9_.-]*$" });
