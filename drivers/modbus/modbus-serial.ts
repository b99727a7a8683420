// modbus-serial is CommonJS: under NodeNext its default import is module.exports, whose typed
// `.default` is the client class. This one place unwraps it for the rest of the code.
import lib from "modbus-serial";

export const ModbusClient = lib.default;
export type ModbusClient = InstanceType<typeof lib.default>;
