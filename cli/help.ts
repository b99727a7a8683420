// podwarden's usage text: every subcommand and option, as `podwarden --help` prints it.
import { packageVersion } from "../agent/version.js";

export const HELP = `podwarden ${packageVersion()}: per-pod agent for liquid-cooled GPU racks

usage:
  podwarden demo [--broker <url>] [--<what>-port <n> | --free-ports] [--sparkplug] [--redfish-racks]
                                                         the demo pod: embedded broker + simulator + agent, live board
                                                         (--sparkplug: also a Sparkplug B edge node)
  podwarden run -c <config.yaml> [--first-start]        run the pod controller (the daemon);
                                                         --first-start: the state directory's missing files
                                                         are not losses (a new pod, or an upgrade from a
                                                         version without the state manifest)
  podwarden check-config -c <config.yaml> [--fail-safe]  validate a config and exit (0 valid, 2 invalid);
                                                         --fail-safe also prints every actuator's
                                                         behaviour per fault class (docs/safety.md)
  podwarden check-config -c <config.yaml> --migrate [--out <new.yaml>]
                                                         a config written for an earlier podwarden, migrated:
                                                         the new file on stdout (or --out), each change and
                                                         why on stderr; 0 if the result is valid, else 2
  podwarden rollback [--status] [--state-dir <dir>] [-c <config.yaml>]
                                                         back to the last good build (the health window's record)
                                                         and the config it ran with, from the package kept aside
                                                         at the upgrade; --status: the record, and what it would do
  podwarden reset-leak --rack <name> [-c <config.yaml>]  authorised reset of a rack's leak latch (refused while wet)
  podwarden io [--json] [-c <config.yaml>]              every field point live: value, quality, age, its device's
                                                         health (commissioning: docs/commissioning.md)
  podwarden io force <output> <value> --lease <s> | <output> --release [-c <config.yaml>]
                                                         a loop check: hold a control output (a rack's valve, a pump's
                                                         speed) at a value for a lease, in maintenance only; audited
  podwarden maintenance on|off [-c <config.yaml>]        the pod's maintenance mode, as the HMI sets it
  podwarden commission --by <name> [-c <config.yaml>]    every point and output as seen now (an output with its read-back
                                                         and feedback), kept in <stateDir>/commissioning as JSON and
                                                         HTML to sign; exit 1 when anything is not ok
  podwarden scan --bus <name> [--from <id>] [--to <id>] [--timeout-ms <ms>] [--json] [-c <config.yaml>]
                                                         who answers on a serial bus: each unit id asked one harmless
                                                         read behind the daemon's own traffic; answers, framing errors
  podwarden recording list|trigger [-c <config.yaml>]    the flight recorder's recordings; trigger one now (docs/engineering.md)
  podwarden recording export <id> --csv [--out <file>] [-c <config.yaml>]
                                                         a recording as CSV, one row per tick
  podwarden recording replay <id> [--with-config <file>] [--wasm <file>] [-c <config.yaml>]
                                                         replay it into the virtual pod (the config's wiring, -c,
                                                         and the hot path): bit for bit with the recorded config,
                                                         the actuator writes; with another config or build, the trips
  podwarden tune <loop> [--status | --abort] [-c <config.yaml>]
                                                         relay autotune of a loop (rack-1.valve, cdu.pump): follows it to
                                                         the end and prints Ku, Pu, a model and proposed gains; Ctrl-C aborts
  podwarden gains <loop> [--rule <r> | --kp <x> --ki <y> [--kd <z>] | --revert] [-c <config.yaml>]
                                                         a loop's gains: show; apply a proposal of its last tuning
                                                         (simc, tyreus-luyben, ziegler-nichols) or gains by hand; back to the config's
  podwarden stroke <rack> --valve supply|return | --status | --abort [-c <config.yaml>]
                                                         partial-stroke test of a rack's isolation valve: follows it to
                                                         the end and prints its figures; Ctrl-C aborts it
  podwarden hil run <scenario.yaml>... [-c <config.yaml>] [--sim <sim.yaml> | --rig <rig.yaml>] [--repeat <n>] [--junit <file>] [--html <file>]
                                                         HIL scenarios with expectations, in virtual time against the
                                                         simulator, or (--rig) in real time: the daemon against a rig
                                                         (docs/hil.md); exit 1 when any expectation fails
  podwarden sim -c <sim.yaml> [--scenario <file.yaml>] [--rtu <serial port>]
                                                         run the simulated pod (Modbus TCP + HTTP control; --rtu: every device
                                                         on that serial port over Modbus RTU too, 115200 baud)
  podwarden keygen --key-id <id> [--out <dir>]           make an Ed25519 key pair for signing commands
  podwarden hmi-user --users <file> --name <n> --role <r>[,<r>]
                                                         add or replace an HMI user (password read from
                                                         stdin: typed without echo, or piped)
  podwarden command <name> --url <broker> --site <s> --pod <p> --key <file> --key-id <id> [--params <json>]
                                                         sign and send a command, print its response
  podwarden sparkplug-watch --url <broker> [--group <g>] [--node <n>]
                                                         print a Sparkplug B group's messages, decoded
  podwarden fleet watch --url <broker>[,<broker>...] [--share <group>] [--consumers <n>] [--site <s>[,<s>]]
                        [--every <s>] [--json] [--ack]   mission control's view of every pod: online/offline,
                                                         events and telemetry counted by seq (gaps, losses);
                                                         --ack: each pod's events acknowledged by seq, for pods
                                                         that hold them until then (uplink.consumerAck)
  podwarden fleet command <name> --url <broker> --pods <site/pod>[,...] --key <file> --key-id <id> [--params <json>]
                                                         sign and send a command to each pod, print each answer
  podwarden fleet config push <file> --url <broker> --pods <site/pod or pattern>[,...] --key <file> --key-id <id>
                        [--canary <site/pod>] [--batch <n>] [--window <s>] [--vars <file.json>]
                                                         push a config: a canary pod, then batches, each pod
                                                         keeping it only after its health window; stops at the
                                                         first pod that does not keep it
  podwarden fleet record --url <broker> --pods <site/pod> --out <file> [--seconds <n>]
                                                         record a pod's session (retained state, telemetry, events)
                                                         for the pod emulator (default 60 s)
  podwarden fleet emulate --url <broker>[,<broker>...] --site <s> [--count <n>] [--first <k>] [--session <file>]
                        [--telemetry-every <n>] [--alarm-every <s>] [--key-id <id> --public-key <file>]
                                                         run emulated pods (a fleet's load without daemons);
                                                         faults from stdin: alarm|disconnect|silent|resume <k>|all
  podwarden --version
  podwarden --help

exit codes: 0 ok, 1 failure, 2 usage or invalid config, 3 (run) another podwarden already runs
this pod or this state directory on this host

options:
  -c, --config <file>     config file (YAML)
      --scenario <file>   scenario to play (overrides the config's scenario key)
      --rack <name>       reset-leak: the rack
      --state-dir <dir>   reset-leak, io, maintenance, scan, commission, recording, tune, gains, stroke: the daemon's state directory (default: the config's stateDir,
                          $STATE_DIRECTORY, or /var/lib/podwarden)
      --broker <url>      demo: use this MQTT broker instead of the embedded one
      --broker-port <n>   demo: port of the embedded broker (default 1883)
      --device-port <n>   demo: the simulated Modbus devices' first port: the CDU on it, rack N on it + N (default 15020)
      --bmc-port <n>      demo: the simulated rack BMCs' first port, with --redfish-racks: rack N on it + N - 1 (default: free ones)
      --fault-port <n>    demo: the simulator's fault API (default 8502)
      --hmi-port <n>      demo: the HMI (default 8470)
      --metrics-port <n>  demo: metrics and health (default 9464)
      --redfish-port <n>  demo: the pod's Redfish service (default: a free one)
      --free-ports        demo: every port not set by a flag on a free one. A port set by a flag (0: a free one) that is
                          in use stops the demo with one line; one left to its default moves to a free one, said. The
                          ports the demo got are printed on one line at the start and under the board
      --sparkplug         demo: publish the pod as a Sparkplug B edge node too (docs/sparkplug.md)
      --redfish-racks     demo: read each rack's power and leak detector, and write its cap, through its simulated BMC over Redfish (docs/redfish.md)
      --group <g>         sparkplug-watch: the Sparkplug group id (default podwarden)
      --node <n>          sparkplug-watch: one edge node only (default: all of the group)
      --key-id <id>       keygen, command, fleet emulate: the key's id (as configured in uplink.commands.keys)
      --users <file>      hmi-user: the HMI's users file (hmi.usersFile; created if missing)
      --name <n>          hmi-user: the login name
      --role <r>          hmi-user: observer, operator or engineer (several: comma-separated)
      --out <dir>         keygen: where to write <id>.key and <id>.pub (default .); check-config --migrate: the migrated file;
                          recording export: the CSV file (default stdout)
      --csv               recording export: as CSV
      --with-config <f>   recording replay: replay with this config's tuning instead of the recorded one
      --wasm <file>       recording replay: replay with this hot-path build (build/hotpath.release.wasm of another version)
      --status, --abort   tune: the loop's running or last tuning; abort the running one;
                          stroke: the running test and each valve's last; abort the running one
      --valve <v>         stroke: supply or return
      --sim <file>        hil run: the simulator's config (default configs/sim-pod.yaml)
      --rig <file>        hil run: run in real time, podwarden run against the rig this adapter describes
                          (configs/hil/rigs/sim-pod.yaml: podwarden sim -c configs/sim-pod.yaml as the rig)
      --repeat <n>        hil run: run each scenario n times, a campaign: seeds and phases varied in virtual time;
                          each time to safe's p50, p99 and max over the runs (default 1)
      --junit <file>      hil run: write a JUnit XML report
      --html <file>       hil run: write the self-contained HTML report
      --rule <r>          gains: apply this rule's proposal from the loop's last tuning
      --kp, --ki, --kd <x>  gains: apply these gains (kd default 0)
      --revert            gains: back to the config's gains
      --lease <s>         io force: how long the force holds, s (then the loop takes its output back)
      --release           io force: end the output's force now
      --by <name>         commission: who signs the record off
      --bus <name>        scan: the serial bus (modbus.buses[].name)
      --from, --to <id>   scan: the unit ids asked (default 1 to 247)
      --timeout-ms <ms>   scan: how long each id is waited for (default 100; 10 to 2000)
      --url <url>         command, sparkplug-watch: the broker; fleet: the brokers (comma-separated, tried in turn)
      --share <group>     fleet watch: take the pods' data through this shared-subscription group ($share/<group>/...)
      --consumers <n>     fleet watch: connections opened in the group (default 1)
      --ack               fleet watch: acknowledge each pod's events by seq on podwarden/<site>/<pod>/ack
                          (uplink.consumerAck); one watch per share group: it acknowledges what its ledger holds
      --every <s>         fleet watch, fleet emulate: seconds between summary lines (default 5)
      --json              io, scan: JSON; fleet watch, fleet emulate: a JSON object per line instead of words
      --pods <list>       fleet command: the pods addressed, site/pod, comma-separated; fleet config push: also
                          patterns (site-a/*, */pod-1) matched against the pods that have said their state
      --canary <site/pod> fleet config push: the pod pushed to first, alone (default the first chosen)
      --batch <n>         fleet config push: pods pushed to at once after the canary (default 5)
      --window <s>        fleet config push: each pod's health window (default its configPush.healthWindowS)
      --vars <file>       fleet config push: each pod's values for its {{name}} placeholders, JSON
                          {"<site/pod>" or "*": {"<name>": value}}; {{site}} and {{pod}} are always given
      --timeout <s>       fleet command, fleet config push: how long to wait for an answer (default 10)
      --count <n>         fleet emulate: pods emulated (default 100), named <site>/emu-<k>
      --first <k>         fleet emulate: the first pod's number (default 0: several processes, one fleet)
      --session <file>    fleet emulate: the recorded session played (default configs/fleet/demo-pod-session.json)
      --telemetry-every <n>  fleet emulate: play one telemetry message in n (default 1: the recorded rate)
      --alarm-every <s>   fleet emulate: each pod raises an alarm once every s seconds (default never)
      --keepalive <s>     fleet emulate: MQTT keepalive (default 10)
      --public-key <file> fleet emulate: answer commands signed by this key (with --key-id)
      --site <s>, --pod <p>  command: the pod addressed; fleet watch: only these sites (comma-separated);
                          fleet emulate: the pods' site
      --key <file>        command: the private key (PEM)
      --params <json>     command: its parameters (default {})
      --seq <n>           command: sequence number (default: milliseconds since the epoch)
      --ttl <s>           command: lifetime in seconds (default 60)
      --mqtt-version <n>  command, fleet: 4 (MQTT 3.1.1) or 5 (default 5)
      --username <u>      command: broker user name (password from $PODWARDEN_MQTT_PASSWORD)
  -h, --help              this text
  -v, --version           print the version
`;
