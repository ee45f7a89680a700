// The public API of @zmcp/zulip-sim. Every export below is a promise to the packages that
// test against the simulator: adding a line is an API decision. Internal modules stay
// unexported.

export type { DemoRealmInfo, DemoSim } from './demo.js';
export { seedDemoRealm, startDemoSim } from './demo.js';
export type { SimErrorCode, SimErrorOptions } from './errors.js';
export { SimError } from './errors.js';
export { startZulipSim } from './sim.js';
export type {
  SimEditChanges,
  SimEditEntry,
  SimFaultHandle,
  SimFaultRule,
  SimFaults,
  SimKnobs,
  SimLogger,
  SimMessage,
  SimQueueInfo,
  SimReaction,
  SimReactionOptions,
  SimRealm,
  SimRequestRecord,
  SimSendInput,
  SimStream,
  SimStreamInput,
  SimTypingTarget,
  SimUpload,
  SimUser,
  SimUserInput,
  ZulipSim,
  ZulipSimOptions,
} from './types.js';
