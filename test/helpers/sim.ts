// A real-time simulated pod on ephemeral loopback ports, for tests.
import { simConfig, type SimConfig, type SimOverrides } from "../../sim/config.js";
import { SimControlApi } from "../../sim/control-api.js";
import { PodSim } from "../../sim/pod-sim.js";
import type { Scenario } from "../../sim/scenario.js";

export interface TestSim {
  sim: PodSim;
  api: SimControlApi;
  controlUrl: string;
  port(device: string): number;
  stop(): Promise<void>;
}

export async function startTestSim(overrides: SimOverrides = {}, scenario?: Scenario): Promise<TestSim> {
  const config: SimConfig = simConfig({ ...overrides, devices: { basePort: 0, ...overrides.devices }, control: { port: 0 } });
  const sim = new PodSim(config, scenario);
  await sim.start();
  const api = new SimControlApi(sim);
  const cport = await api.listen(0);
  return {
    sim,
    api,
    controlUrl: `http://127.0.0.1:${cport}`,
    port: (device) => {
      const p = sim.portOf(device);
      if (p === undefined) throw new Error(`no device ${device}`);
      return p;
    },
    stop: async () => {
      await api.close();
      await sim.stop();
    },
  };
}
