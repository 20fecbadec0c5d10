/**
 * dlock for Node.js: distributed locks with quorum fencing tokens on Redis masters running the
 * dlock module (docs/node.md). The same protocol, defaults and meaning as the Rust and Python
 * clients; durations in milliseconds, tokens as bigint.
 */

/**
 * The dlock release this package belongs to: the one version of the module and every client
 * (MODULE LIST shows it as major*10000+minor*100+patch; scripts/version.sh sets it).
 */
export const VERSION = "0.5.0";
export { LockManager, Lock, CrossSlotSet, type LockManagerOptions, type AcquireOptions, type CampaignOptions, type SetOptions } from "./manager.js";
export { MAX_SET, type KeySet } from "./sets.js";
export { groups, splitSet } from "./transport/cluster.js";
export { Leadership, MAX_VALUE_LEN, leaderView, splitOwner, type Leader, type Seen } from "./election.js";
export { Observer, type Observed } from "./electionWatch.js";
export { renewMargin, renewal, type Extension, type Renewal } from "./renewal.js";
export {
  DlockError,
  LockContendedError,
  NoQuorumError,
  LockLostError,
  StaleTokenError,
  ValidityExpiredError,
  NodeError,
  WrongKindError,
  ArgumentRefusedError,
  DatabaseRefusedError,
  type NodeFailure,
} from "./errors.js";
export type { DataClient } from "./lock.js";
export type { TlsOptions } from "./connect.js";
export { MAX_LIMIT, quorum, type Kind } from "./kind.js";
export { MAX_WAIT } from "./options.js";
export { validity, type Drift } from "./timing.js";
export { parseNode, redact, type NodeUrl } from "./transport/urls.js";
export { Acquisition, type Event, type Step } from "./acquisition.js";
