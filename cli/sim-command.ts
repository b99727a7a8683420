// `podwarden sim -c <sim.yaml>`: runs the simulated pod in real time until SIGINT/SIGTERM.
import { dirname, resolve } from "node:path";
import { loadSimConfig } from "../sim/config.js";
import { SimControlApi } from "../sim/control-api.js";
import { PodSim } from "../sim/pod-sim.js";
import { loadScenario } from "../sim/scenario.js";

export interface RunningSim {
  sim: PodSim;
  api: SimControlApi;
  controlPort: number;
  stop(): Promise<void>;
}

/** `rtu`: a serial port to serve every device on over Modbus RTU too (115200 baud), over the config's devices.rtu */
export async function startSim(configPath: string, scenarioPath?: string, rtu?: string): Promise<RunningSim> {
  const loaded = loadSimConfig(configPath);
  const config = rtu === undefined ? loaded : { ...loaded, devices: { ...loaded.devices, rtu: { path: rtu, baudRate: loaded.devices.rtu?.baudRate ?? 115200 } } };
  const scenarioFile = scenarioPath ?? (config.scenario !== undefined ? resolve(dirname(configPath), config.scenario) : undefined);
  const scenario = scenarioFile !== undefined ? loadScenario(scenarioFile) : undefined;
  const sim = new PodSim(config, scenario);
  await sim.start();
  const api = new SimControlApi(sim);
  let controlPort: number;
  try {
    controlPort = await api.listen(config.control.port, config.control.host);
  } catch (err) {
    await sim.stop();
    throw err;
  }
  return {
    sim,
    api,
    controlPort,
    stop: async () => {
      await api.close();
      await sim.stop();
    },
  };
}

export async function simCommand(configPath: string, scenarioPath: string | undefined, log: (line: string) => void, rtu?: string): Promise<void> {
  const running = await startSim(configPath, scenarioPath, rtu);
  const { sim, controlPort } = running;
  const host = sim.config.devices.host;
  log(`podwarden sim: ${sim.plant.racks.length} racks, seed ${sim.config.seed}`);
  for (const d of sim.devices.all) log(`  ${d.name.padEnd(8)} modbus tcp ${host}:${sim.portOf(d.name) ?? "?"} unit ${d.unitId}`);
  const rf = sim.config.devices.redfish;
  for (const b of sim.bmcs) log(`  ${b.name.padEnd(8)} redfish ${rf?.tls === undefined ? "http" : "https"} ${host}:${sim.portOf(`${b.name}.bmc`) ?? "?"}`);
  if (sim.config.devices.rtu !== undefined) log(`  rtu bus   ${sim.config.devices.rtu.path} @ ${sim.config.devices.rtu.baudRate} baud, every unit id`);
  log(`  control   http://${sim.config.control.host}:${controlPort}/truth  (POST /fault, POST /clear)`);
  await new Promise<void>((done) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      running.stop().then(done, done);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
