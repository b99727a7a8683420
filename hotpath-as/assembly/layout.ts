// Memory layout and codes shared by the AssemblyScript hot path and the TypeScript host.
//
// This file is compiled twice: by asc (where an untyped integer const is an i32) and by tsc
// (where it is a number). It must therefore stay in the common subset of both languages:
// plain `export const NAME = <integer literal>;` lines and nothing else. One file means the
// WASM bank, the TypeScript reference model and the host views can never disagree on an id.
//
// The bank is struct-of-arrays: every field is its own contiguous array of CAPACITY slots.
// There are six regions (loop/point/rack x f64/i32); field F of region R for slot i lives at
//   regionPtr(R) + F * (CAPACITY(R) * 8 + FIELD_PAD_BYTES) + i * 8   (f64 regions)
//   regionPtr(R) + F * (CAPACITY(R) * 4 + FIELD_PAD_BYTES) + i * 4   (i32 regions)
// The pad keeps the field arrays from starting at power-of-two distances: without it, slot i of
// every field maps to the same L1 cache set and the step thrashed at ~80 ns per loop.
export const FIELD_PAD_BYTES = 64;

// ---- capacities -------------------------------------------------------------------------
export const MAX_LOOPS = 1024;
export const MAX_POINTS = 4096;
export const MAX_RACKS = 64;

// ---- regions ----------------------------------------------------------------------------
export const REGION_LOOP_F64 = 0;
export const REGION_LOOP_I32 = 1;
export const REGION_POINT_F64 = 2;
export const REGION_POINT_I32 = 3;
export const REGION_RACK_F64 = 4;
export const REGION_RACK_I32 = 5;
// One bit per point, 32 to a u32 word (point i: word i >> 5, bit i & 31). The host sets a
// point's bit whenever it writes the point's sample or config (bank-config.ts does); the step
// then validates only marked points, the points whose verdict can still change on their own
// (debouncing, leak, NaN sample), and, when a stale or stuck timer falls due, every point.
export const REGION_POINT_DIRTY = 6;
export const REGION_COUNT = 7;
// Every this many ticks the step validates every point whatever the marks say, so a sample
// written without its mark is still seen within this many ticks.
export const FULL_SCAN_TICKS = 100;

// ---- loop f64 fields --------------------------------------------------------------------
// config (written by the host when config loads or a command is accepted, never per tick)
export const LF_KP = 0; // proportional gain, output units per PV unit
export const LF_KI = 1; // integral gain, output units per (PV unit * s)
export const LF_KD = 2; // derivative gain, output units per (PV unit / s)
export const LF_TF = 3; // derivative filter time constant, s (0 = unfiltered)
export const LF_KFF = 4; // feed-forward gain, output units per FF unit
export const LF_FF_BIAS = 5; // feed-forward bias subtracted from the FF input before the gain
export const LF_OUT_MIN = 6; // output envelope, low end (also the fail-closed value)
export const LF_OUT_MAX = 7; // output envelope, high end (also the fail-open value)
export const LF_OUT_RATE = 8; // output slew limit, output units per s (0 = unlimited)
export const LF_SP_RAMP = 9; // setpoint ramp rate, PV units per s (0 = step)
export const LF_DEADBAND = 10; // error deadband, PV units
export const LF_SAFE_FIXED_LEAK = 11; // output used when SAFE_LEAK = SAFE_FIXED
export const LF_SAFE_FIXED_SENSOR = 12; // output used when SAFE_SENSOR = SAFE_FIXED
// commands (host writes when they change)
export const LF_SP = 13; // setpoint target, PV units
export const LF_MANUAL = 14; // output in Manual mode; the step makes it track the output in every other mode
export const LF_OVERRIDE = 15; // output in Override mode; tracks the output likewise
// state and outputs (written by the step only)
export const LF_SP_RAMPED = 16; // the setpoint the PID actually uses
export const LF_INTEGRAL = 17; // integral term, output units
export const LF_DFILT = 18; // filtered PV derivative, PV units per s
export const LF_PV_PREV = 19; // PV at the previous tick, for derivative on measurement
export const LF_OUT = 20; // the actuator command
export const LF_PV = 21; // PV the loop used this tick (held good value)
export const LF_ERROR = 22; // error after deadband and action sign
// state: the output the loop had when a rack isolation took it over (NaN: none yet). Automatic
// resumes from it after the isolation, so a rack returned to service (a leak reset, return-rack)
// ramps its valve back to where it was under load instead of restarting its loop from the
// leak-safe value: from closed, the rack overheated on the way back (an over-temperature alarm).
export const LF_RESUME = 23;
// first-order PV filter: time constant, s (0 = none), and its state (NaN: restart from the next
// good sample). The interlocks and quality checks see the raw sample; only the PID sees this.
export const LF_PV_FILTER_S = 24;
export const LF_PV_FILT = 25;
// relay autotune (Astrom-Hagglund), config: the relay's amplitude, output units (0 = this loop
// cannot be tuned); the least hysteresis, PV units; the largest deviation of the PV from the
// operating point before the tuning aborts, PV units; how long the noise is measured before the
// relay starts, ms; how long the whole tuning may take, ms
export const LF_TUNE_AMP = 26;
export const LF_TUNE_HYST_MIN = 27;
export const LF_TUNE_DEV_MAX = 28;
export const LF_TUNE_NOISE_MS = 29;
export const LF_TUNE_TIMEOUT_MS = 30;
// relay autotune, state (the host initialises them when it starts a tuning, bank-inputs.ts):
// the tick time it started; the output held while the noise is measured, and the relay's
// centre; the PV's lowest and highest value, sum and count over the noise window; then the PV
// the relay switches around, its hysteresis and the amplitude it uses (outputs)
export const LF_TUNE_T0 = 31;
export const LF_TUNE_BIAS = 32;
export const LF_TUNE_LO = 33;
export const LF_TUNE_HI = 34;
export const LF_TUNE_SUM = 35;
export const LF_TUNE_N = 36;
export const LF_TUNE_CENTER = 37;
export const LF_TUNE_HYST = 38;
export const LF_TUNE_D = 39;
// minimum-flow floor (rack loops): the flow the loop keeps through its rack at the least, in the
// rack flow point's units (L/min; 0 = no floor), and how fast the floor moves the output, output
// units per (flow unit * s). A return-temperature loop with little heat to take away throttles
// its valve to outMin, and at 5 kW of a 100 kW rack that was 4.7 L/min: below the loss-of-flow
// alarm, and below the flow a rack needs before its power returns after a leak reset. The floor
// is an integral-only flow loop whose output is a lower limit on the PID's: max-select, the
// PID's integral held against it as against any limit.
export const LF_MIN_FLOW = 40;
export const LF_FLOW_GAIN = 41;
// state: the floor's output, the dynamic low limit (NaN: not running; it starts from outMin)
export const LF_FLOW_LO = 42;
export const LOOP_F64_FIELDS = 43;

// ---- loop i32 fields --------------------------------------------------------------------
export const LI_PV_POINT = 0; // index of the PV input point
export const LI_FF_POINT = 1; // index of the feed-forward input point, -1 for none
export const LI_RACK = 2; // rack whose leak isolation governs this loop, -1 for none
export const LI_ACTION = 3; // ACTION_DIRECT or ACTION_REVERSE
export const LI_SAFE_LEAK = 4; // SAFE_* action while the rack is isolated
export const LI_SAFE_SENSOR = 5; // SAFE_* action while an input is bad or stale
export const LI_MODE = 6; // MODE_* requested by the host
export const LI_STATUS = 7; // LS_* bit field, output
export const LI_BRANCH = 8; // BRANCH_* taken this tick (state: bumpless transfer keys off a change)
export const LI_TUNE = 9; // TUNE_* phase of a relay autotune (state; the host starts and stops it)
export const LI_TUNE_RELAY = 10; // state: the relay's side, +1 (output bias + d) or -1 (bias - d)
export const LI_TUNE_SWITCHES = 11; // output: relay switches since the relay started
export const LI_TUNE_END = 12; // output: TUNE_END_* why the last tuning ended (0 while one runs)
export const LOOP_I32_FIELDS = 13;

// ---- point f64 fields -------------------------------------------------------------------
export const PF_VALUE = 0; // input: latest sample, engineering units
export const PF_TS = 1; // input: source time of that sample, monotonic ms
export const PF_MIN = 2; // valid range low
export const PF_MAX = 3; // valid range high
export const PF_RATE_MAX = 4; // max |dv/dt| between samples, units per s (0 = unchecked)
export const PF_STALE_MS = 5; // max sample age, ms (0 = unchecked)
export const PF_STUCK_EPS = 6; // a change larger than this resets the stuck timer
export const PF_STUCK_MS = 7; // no change beyond eps for this long = stuck, ms (0 = unchecked)
export const PF_HELD = 8; // output: last sample that passed every raw check
export const PF_PREV_VALUE = 9; // state: previous finite sample, for the rate check
export const PF_PREV_TS = 10; // state: its source time
export const PF_STUCK_REF = 11; // state: value the stuck timer is measured against
export const PF_STUCK_SINCE = 12; // state: tick time the stuck timer started
// state: until this tick time, with no new sample, nothing about this point can change, so the
// step skips it. -Infinity forces a full evaluation; writePoint() sets that after a config change.
export const PF_QUIET_UNTIL = 13;
// The plant around a point (issue 53, item 5): on a noiseless plant a steady, quantised reading
// does not change for minutes, and time alone called it stuck (3 false trips in 240 s at
// stuckMs 5000). With PI_STUCK_LOOP set and PF_STUCK_MOVE above 0, an unchanged point is stuck
// only once its loop's output has moved by STUCK_MOVE since the point last changed, and the
// point has stayed unchanged for stuckMs after that move: a live sensor answers a moved valve.
export const PF_STUCK_MOVE = 14; // config: the least move of the loop's output (output units) that a live point must answer
export const PF_STUCK_OUT_REF = 15; // state: the loop's output when the point last changed
export const PF_STUCK_MOVED_AT = 16; // state: the tick time that output first moved STUCK_MOVE away from it, +Infinity until then
export const POINT_F64_FIELDS = 17;

// ---- point i32 fields -------------------------------------------------------------------
export const PI_KIND = 0; // KIND_ANALOG or KIND_LEAK
export const PI_RACK = 1; // for KIND_LEAK: the rack it guards, -1 for none
export const PI_DEBOUNCE_FAULT = 2; // consecutive faulty ticks before the quality goes bad (>= 1)
export const PI_DEBOUNCE_CLEAR = 3; // consecutive clean ticks before it goes good again (>= 1)
export const PI_RAW = 4; // output: Q_* bits of this tick's sample, before debounce
export const PI_QUALITY = 5; // output: debounced Q_* bits, 0 = good
export const PI_FAULT_COUNT = 6; // state
export const PI_CLEAR_COUNT = 7; // state
export const PI_RATE_FAULT = 8; // state: the current sample failed the rate check
export const PI_WET_COUNT = 9; // state, leak points: wet ticks not yet cleared by a dry run
export const PI_DRY_COUNT = 10; // state, leak points: consecutive dry ticks
export const PI_WET = 11; // output, leak points: 1 = debounced wet
export const PI_STUCK_LOOP = 12; // config: the loop whose output is the plant around this point (-1: none, time alone judges)
export const POINT_I32_FIELDS = 13;

// ---- rack f64 fields --------------------------------------------------------------------
export const RF_ISOLATED_FLOW_MAX = 0; // flow below this proves the rack isolated, L/min
export const RF_ISOLATION_DEADLINE_MS = 1; // time allowed for that proof, ms
export const RF_ISOLATED_SINCE = 2; // state: tick time isolation began, ms
export const RF_FLOW = 3; // output: flow the proof used (held value)
export const RACK_F64_FIELDS = 4;

// ---- rack i32 fields --------------------------------------------------------------------
export const RI_FLOW_POINT = 0; // index of the rack flow point, -1 for none (proof then impossible)
export const RI_SENSOR_FAULT_ACTION = 1; // LEAK_FAULT_HOLD or LEAK_FAULT_ISOLATE
export const RI_RESET = 2; // input: host sets 1 to request a latch reset; the step clears it
export const RI_MANUAL_ISOLATE = 3; // input: 1 = operator has taken the rack out of service
export const RI_STATE = 4; // output: RACK_* isolation state (latched)
export const RI_STATUS = 5; // output: RS_* bit field
export const RI_SUPPLY_OPEN = 6; // output: supply isolation valve, 1 open / 0 closed
export const RI_RETURN_OPEN = 7; // output: return isolation valve, 1 open / 0 closed
export const RI_RESET_RESULT = 8; // output: RESET_* outcome of the last reset request
export const RI_WET = 9; // scratch: any leak point of this rack is debounced wet this tick
export const RI_LEAK_FAULT = 10; // scratch: any leak point of this rack is faulty this tick
// The isolation valves' closed limit switches, where the pod has them: the proof then also needs
// each to read closed. Flow alone cannot tell a seized isolation valve from a closed one when the
// control valve's leak position passes less than the threshold (docs/safety.md).
export const RI_SUPPLY_CLOSED_POINT = 11; // index of the supply valve's closed-limit point (1 at the limit), -1 for none
export const RI_RETURN_CLOSED_POINT = 12; // index of the return valve's closed-limit point, -1 for none
export const RACK_I32_FIELDS = 13;

// ---- enumerations -----------------------------------------------------------------------
export const KIND_ANALOG = 0;
export const KIND_LEAK = 1;

// Leak sensor values, as the drivers decode them (Redfish LeakDetector: OK / Critical / Warning)
export const LEAK_DRY = 0;
export const LEAK_WET = 1;
export const LEAK_CABLE_FAULT = 2;

export const ACTION_DIRECT = 1; // output rises when PV rises above setpoint (cooling valve on return temp)
export const ACTION_REVERSE = -1; // output rises when PV falls below setpoint (pump on differential pressure)

export const MODE_AUTOMATIC = 0;
export const MODE_MANUAL = 1;
export const MODE_OVERRIDE = 2;
export const MODE_DISABLED = 3;

export const SAFE_OPEN = 0; // drive to OUT_MAX (a cooling valve fails open)
export const SAFE_CLOSED = 1; // drive to OUT_MIN
export const SAFE_HOLD = 2; // hold the last commanded output
export const SAFE_FIXED = 3; // drive to the configured fixed value (clamped to the envelope)

export const LEAK_FAULT_HOLD = 0; // a faulty leak sensor keeps the rack in service (alarm only)
export const LEAK_FAULT_ISOLATE = 1; // a faulty leak sensor isolates the rack as if wet

export const RACK_NORMAL = 0;
export const RACK_ISOLATING = 1; // valves commanded closed, waiting for flow to prove it
export const RACK_ISOLATED = 2; // flow proved below the threshold, and the closed limit switches (where configured) at their limit
export const RACK_ESCALATED = 3; // proof failed by the deadline, or flow came back, or a valve left its closed limit: agent escalates

export const RESET_NONE = 0;
export const RESET_ACCEPTED = 1;
export const RESET_REFUSED_WET = 2; // a leak input is still wet: the latch stays

export const BRANCH_NONE = 0;
export const BRANCH_LEAK = 1;
export const BRANCH_FAILSAFE = 2;
export const BRANCH_MANUAL = 3;
export const BRANCH_OVERRIDE = 4;
export const BRANCH_DISABLED = 5;
export const BRANCH_AUTOMATIC = 6;
export const BRANCH_TUNE = 7;

// relay autotune phases (LI_TUNE)
export const TUNE_OFF = 0;
export const TUNE_NOISE = 1; // output held at the bias while the PV's noise is measured
export const TUNE_RELAY = 2; // the relay runs
// why a tuning ended (LI_TUNE_END)
export const TUNE_END_NONE = 0;
export const TUNE_END_STOPPED = 1; // the host stopped it (done, or an operator's abort)
export const TUNE_END_INTERLOCK = 2; // the loop's rack was isolated
export const TUNE_END_BAD_INPUT = 3; // an input or command went bad (the fail-safe interlock)
export const TUNE_END_LEAK = 4; // a leak, or a latched isolation, anywhere in the pod
export const TUNE_END_TIMEOUT = 5;
export const TUNE_END_DEVIATION = 6; // the PV left the operating point by more than the bound
export const TUNE_END_ENVELOPE = 7; // the operating point leaves no room for the relay in the envelope

export const STEP_OK = 0;
export const STEP_BAD_DT = -1; // dt not finite or not > 0: nothing was changed
export const STEP_BAD_COUNTS = -2; // configured counts exceed capacity: nothing was changed

// ---- point quality bits (Q_*) -----------------------------------------------------------
export const Q_NOT_FINITE = 1; // NaN or +/-Inf
export const Q_RANGE = 2; // outside [min, max], or a leak value that is not 0/1/2
export const Q_RATE = 4; // changed faster than rateMax since the previous sample
export const Q_STALE = 8; // source time older than staleMs
export const Q_STUCK = 16; // no change beyond eps for stuckMs
export const Q_CABLE_FAULT = 32; // leak rope reports a cable fault (a sensor fault, not a leak)
export const Q_NEVER = 64; // no sample has been accepted yet (the state at start)

// ---- loop status bits (LS_*) ------------------------------------------------------------
// Exactly one of the seven branch bits (the six below and LS_TUNING) is set for every configured loop.
export const LS_INTERLOCK_LEAK = 1; // priority 1: the rack is isolated
export const LS_INTERLOCK_FAILSAFE = 2; // priority 2: an input or command is bad
export const LS_MANUAL = 4; // priority 3
export const LS_OVERRIDE = 8; // priority 3
export const LS_DISABLED = 16; // priority 3: output frozen
export const LS_AUTOMATIC = 32; // priority 4
export const LS_PV_BAD = 64; // why failsafe: PV point quality is bad
// The feed-forward input is bad: its term is dropped and the PID runs on the PV alone (a
// secondary input is no reason to fail a loop whose PV is good). Not a fail-safe reason: the
// loop stays in its mode; the change of term is bumpless both ways.
export const LS_FF_BAD = 128;
export const LS_SP_INVALID = 256; // why failsafe: setpoint not finite
export const LS_CMD_INVALID = 512; // why failsafe: manual/override value not finite, or unknown mode
export const LS_SAT_HIGH = 1024; // output clamped at OUT_MAX
export const LS_SAT_LOW = 2048; // output clamped at OUT_MIN
export const LS_RATE_LIMITED = 4096; // output slew-limited this tick
export const LS_INTEGRATOR_HELD = 8192; // conditional integration stopped windup this tick
export const LS_MANUAL_ISOLATE = 16384; // with LS_INTERLOCK_LEAK: isolated by the operator, not a leak
export const LS_TUNING = 32768; // priority 3, above the mode: a relay autotune holds the output
export const LS_FLOW_FLOOR = 65536; // automatic: the minimum-flow floor is above outMin this tick (it holds, or is about to hold, the output up)
export const LS_FLOW_FLOOR_LOST = 131072; // automatic with a floor: the rack's flow input is bad, so the floor is dropped (the PID runs within outMin..outMax)

// ---- rack status bits (RS_*) ------------------------------------------------------------
export const RS_LEAK_WET = 1; // a leak input is debounced wet now
export const RS_LATCHED = 2; // isolation latched (state != RACK_NORMAL)
export const RS_PROVEN = 4; // flow (and the closed limit switches, where configured) proved the isolation
export const RS_ESCALATE = 8; // isolation not proven by the deadline, or lost: escalate
export const RS_LEAK_SENSOR_FAULT = 16; // a leak input is faulty (cable fault, stale, ...)
export const RS_FLOW_BAD = 32; // the flow input is bad, so the isolation cannot be proven
export const RS_MANUAL_ISOLATE = 64; // valves closed by operator request
export const RS_VALVES_CLOSED = 128; // isolation valves commanded closed this tick
export const RS_LIMITS_CLOSED = 256; // every configured closed limit switch reads closed (good) this tick; set when none is configured
