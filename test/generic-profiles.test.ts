// The generic device profiles (profiles/generic-*.yaml, docs/drivers.md "Device profiles"): each
// loads, says it is a pattern and not a device, and reads and writes an independent Modbus server
// (pymodbus, Debian python3-pymodbus) through the driver as its description says: a 4–20 mA
// module's currents in mA with a failure current made invalid, a DI/DO module's inputs, an output
// written and read back and its communication watchdog kept up, a leak controller's zones in the
// leak encoding, and an energy meter's power once its address is overridden by name. pymodbus's
// map is its own (input register n holds n, discrete inputs alternate 0 and 1, known-answer
// vectors in the holding registers), which is what makes the override needed and the reads checkable.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expandProfiles, loadProfile, profileDirs } from "../agent/config/device-profiles.js";
import { ModbusDriver } from "../drivers/modbus/driver.js";
import { freePort } from "../tooling/free-port.js";
import { modbusConfig } from "./helpers/driver.js";
import { stopProcess, waitFor } from "./helpers/processes.js";

const GENERIC = ["generic-ai-4-20ma-8", "generic-ao-4-20ma-4", "generic-cdu-controller", "generic-dio-watchdog-8", "generic-leak-controller-4", "generic-energy-meter"];
const dirs = profileDirs("configs/demo-pod.yaml");

describe("generic device profiles", () => {
  let py: ChildProcess;
  let port: number;
  let f32At: number;
  let u16At: number;
  let driver: ModbusDriver | undefined;

  beforeAll(async () => {
    port = await freePort();
    py = spawn("/usr/bin/python3", ["test/peers/pymodbus_server.py", String(port)], { stdio: ["ignore", "pipe", "inherit"] });
    const layout = await new Promise<string>((resolve, reject) => {
      createInterface({ input: py.stdout! }).once("line", resolve);
      py.once("exit", (code) => reject(new Error(`pymodbus exited ${code}`)));
    });
    const at = (type: string): number => (JSON.parse(layout) as { address: number; type: string; order: string }[]).find((l) => l.type === type && l.order === "ABCD")!.address;
    f32At = at("f32");
    u16At = at("u16");
  }, 30_000);
  afterAll(async () => {
    await driver?.stop();
    if (py !== undefined) await stopProcess(py);
  });

  it("each says it is a pattern to check against the module's manual, not a device's map", () => {
    for (const name of GENERIC) {
      const p = loadProfile(name, dirs)!;
      expect(p.source, name).toMatch(/^Not a device's register map: podwarden's generic pattern/);
      expect(p.source, name).toMatch(/manual/);
    }
  });

  it("reads and writes an independent server as each description says", async () => {
    const problems: string[] = [];
    const tcp = { host: "127.0.0.1", port };
    const data = expandProfiles(
      {
        modbus: {
          groups: [
            { name: "safety", periodMs: 50, priority: 0 },
            { name: "control", periodMs: 50, priority: 1 },
            { name: "telemetry", periodMs: 200, priority: 2 },
          ],
          devices: [
            { name: "ai", profile: "generic-ai-4-20ma-8", unitId: 1, tcp, points: [{ name: "ai1", loop4to20: { at4mA: 0, at20mA: 250 } }] },
            // the module's own safe values, as its manual would give them: do1's is held in coil 20
            // (pymodbus: 0, as the config says), do2's in a holding register pymodbus holds 0xBEEF in
            // (the config says 0: a module set up otherwise than the config says)
            { name: "dio", profile: "generic-dio-watchdog-8", unitId: 1, tcp, lease: { safeValues: [{ output: "do1", table: "coil", address: 20, value: 0 }, { output: "do2", table: "holding", address: u16At, value: 0 }] } },
            { name: "leak", profile: "generic-leak-controller-4", unitId: 1, tcp },
            // a valve's 0–100 % over 4–20 mA, at a holding register past pymodbus's vectors
            { name: "ao", profile: "generic-ao-4-20ma-4", unitId: 1, tcp, outputs: [{ name: "ao1", address: 190, scale: 0.00625, offset: -25, unit: "%" }], points: [{ name: "ao1Raw", table: "holding", address: 190, type: "u16" }] },
            // pymodbus keeps its floats in holding registers: the meter's power moved there by name
            { name: "meter", profile: "generic-energy-meter", unitId: 1, tcp, points: [{ name: "powerKw", table: "holding", address: f32At }] },
            { name: "cdu", profile: "generic-cdu-controller", unitId: 1, tcp, lease: { address: 195 }, points: [{ name: "dpKpa", table: "holding", address: f32At }] }, // its heartbeat clear of the vectors
          ],
        },
      },
      dirs,
      problems,
    ) as { modbus: unknown };
    expect(problems).toEqual([]);
    const d = new ModbusDriver(modbusConfig(data.modbus));
    driver = d;
    d.setHealthGate(() => true);
    d.start();
    const pt = (id: string): { value: number; quality: string; detail?: string } | undefined => d.points.get(id);
    await waitFor(() => ["ai.ai8", "dio.di1", "dio.di2", "leak.zone3", "meter.powerKw"].every((id) => pt(id)?.quality === "good") && pt("ai.ai1")?.detail !== undefined, "every point read", 10_000);
    // the module's currents, in mA (pymodbus: input register n holds n µA)
    expect(pt("ai.ai8")).toMatchObject({ value: 0.007, quality: "good" });
    // a channel given its transmitter's range: 0 µA is a broken loop, said as such
    expect(pt("ai.ai1")?.quality).not.toBe("good");
    expect(pt("ai.ai1")?.detail).toMatch(/below 3\.6 mA: a broken loop/);
    // the DI/DO module's inputs (pymodbus: 0, 1, 0, 1, ... from discrete input 0), and an output written and read back
    expect([pt("dio.di1")?.value, pt("dio.di2")?.value, pt("dio.di3")?.value]).toEqual([0, 1, 0]);
    d.setOutput("dio.do3", 1);
    await waitFor(() => d.outputState("dio.do3")?.written === 1 && d.outputState("dio.do3")?.quality === "good", "do3 written and read back", 10_000);
    // its communication watchdog: fed while control is healthy; while it is not, the module is
    // sent nothing at all (its polls included), so its own watchdog fires
    const dio = (): number => d.stats().devices.find((x) => x.name === "dio")!.stats.requests;
    // its safe values read back at the connect: the one the module holds otherwise is said, the other not
    await waitFor(() => d.stats().devices.find((x) => x.name === "dio")?.leaseProblem !== null, "the safe values checked", 10_000);
    expect(d.stats().devices.find((x) => x.name === "dio")?.leaseProblem).toBe(`its safe value for do2 reads ${0xbeef} (holding ${u16At}), the config says 0`);
    let healthy = false;
    d.setHealthGate(() => healthy);
    await new Promise((r) => setTimeout(r, 300)); // a request in flight when the gate shut finishes
    const ai = (): number => d.stats().devices.find((x) => x.name === "ai")!.stats.requests;
    const [held, aiHeld] = [dio(), ai()];
    await new Promise((r) => setTimeout(r, 600)); // a dozen poll periods, and the lease's
    expect(dio()).toBe(held);
    expect(ai()).toBeGreaterThan(aiHeld); // the other modules polled on
    healthy = true;
    await waitFor(() => dio() > held + 2, "the module fed again", 10_000);
    // the current-output module: 50 % of the valve's span sent as 12 mA (12,000 µA), and read back
    d.setOutput("ao.ao1", 50);
    await waitFor(() => d.outputState("ao.ao1")?.written === 50 && d.outputState("ao.ao1")?.quality === "good", "ao1 written and read back", 10_000);
    await waitFor(() => pt("ao.ao1Raw")?.value === 12_000, "12,000 µA in the module's register", 10_000);
    // the leak controller's zones in the leak encoding (pymodbus: 0, 1, 2 at input registers 0-2)
    expect([pt("leak.zone1")?.value, pt("leak.zone2")?.value, pt("leak.zone3")?.value]).toEqual([0, 1, 2]);
    // the meter's power, overridden to where this server keeps it
    expect(pt("meter.powerKw")).toMatchObject({ value: -123.25, quality: "good" });
    // the CDU controller's pressure, overridden the same way, and its pump's run enable written
    await waitFor(() => pt("cdu.dpKpa")?.quality === "good", "the CDU's pressure read", 10_000);
    expect(pt("cdu.dpKpa")?.value).toBe(-123.25);
    d.setOutput("cdu.pumpRun", 1);
    await waitFor(() => d.outputState("cdu.pumpRun")?.written === 1 && d.outputState("cdu.pumpRun")?.quality === "good", "the pump's run enable written and read back", 10_000);
  }, 30_000);
});
