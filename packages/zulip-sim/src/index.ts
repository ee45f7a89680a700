// The public API of @zmcp/zulip-sim. Every export below is a promise to the packages that
// test against the simulator: adding a line is an API decision. Internal modules stay
// unexported.

export type { DemoRealmInfo, DemoSim } from './demo.js';
export { seedDemoRealm, startDemoSim } from './demo.js';
export type { SimErrorCode, SimErrorOptions } from './errors.js';
export { SimError } from './errors.js';
export type {
  SimSeed,
  SimSeedBot,
  SimSeedChannel,
  SimSeedFault,
  SimSeedMessage,
  SimSeedUser,
} from './seed.js';
export { parseSeed, readSeed, seedFaultRules, seedOptions } from './seed.js';
export { startZulipSim } from './sim.js';
export type {
  SimChannelFolder,
  SimEditChanges,
  SimEditEntry,
  SimFaultHandle,
  SimFaultRule,
  SimFaults,
  SimGroupSetting,
  SimKnobs,
  SimLogger,
  SimMessage,
  SimQueueInfo,
  SimReaction,
  SimReactionOptions,
  SimRealm,
  SimReminder,
  SimRequestRecord,
  SimSendInput,
  SimStream,
  SimStreamInput,
  SimSystemGroup,
  SimTopicsPolicy,
  SimTypingTarget,
  SimUpload,
  SimUser,
  SimUserInput,
  ZulipSim,
  ZulipSimOptions,
} from './types.js';
