// How the driver reaches its devices: a socket per TCP device, a serial port per RTU bus. The
// factory is the seam tests and the virtual pod use to hand the driver other transports.
import type { BusConfig, DeviceConfig, ModbusConfig } from "./config.js";
import { RtuTransport } from "./rtu-transport.js";
import { interFrameMs } from "./serial-line.js";
import { TcpTransport } from "./tcp-transport.js";
import type { ModbusTransport } from "./types.js";

/** Makes the transport of a TCP device or of an RTU bus. The driver asks once per device or bus. */
export interface TransportFactory {
  tcp(device: DeviceConfig & { tcp: NonNullable<DeviceConfig["tcp"]> }, reconnect: ModbusConfig["reconnect"]): ModbusTransport;
  rtu(bus: BusConfig, reconnect: ModbusConfig["reconnect"]): ModbusTransport;
}

/** The wires themselves: a socket per TCP device, a serial port per RTU bus. */
export const WIRE_TRANSPORTS: TransportFactory = {
  tcp: (dc, reconnect) => new TcpTransport({ host: dc.tcp.host, port: dc.tcp.port, maxInFlight: dc.tcp.maxInFlight, connectTimeoutMs: reconnect.connectTimeoutMs, reconnect }),
  rtu: (b, reconnect) => new RtuTransport({ path: b.path, baudRate: b.baudRate, framing: { dataBits: b.dataBits, parity: b.parity, stopBits: b.stopBits }, rs485: b.rs485, guardMs: b.guardMs, interFrameMs: b.interFrameMs ?? interFrameMs(b.baudRate, b, b.latencyMs), reconnect }),
};

