import type { AccessPolicy, AdmissionGate, Logger, ZulipClient } from '@zmcp/core';
import type { DeliveryProgress, FiltersPlane, OpenEventSource, StateStore } from '@zmcp/delivery';
import type { BoundTool, ToolServices } from '@zmcp/tools';
import type { McplConfig } from './config.js';
import type { SentLog } from './sent-log.js';

/** What every connection of one process shares: built once at start-up. */
export interface Runtime {
  readonly config: McplConfig;
  readonly logger: Logger;
  /** The one Zulip client (every call has the configured deadline). */
  readonly client: ZulipClient;
  readonly policy: AccessPolicy;
  /** Who may wake or answer the agent (`ZULIP_ALLOWED_USERS`); `undefined`: no gate, the filters decide. */
  readonly admission: AdmissionGate | undefined;
  readonly services: ToolServices;
  /** The realm tools served (toolsets applied); the attention tools are bound per connection. */
  readonly tools: readonly BoundTool[];
  /** The state store (files or PostgreSQL), keyed by {@link account}. */
  readonly store: StateStore;
  /** The realm and bot the state is kept under (`stateAccount`). */
  readonly account: string;
  /** The fleet's shared event queue (PostgreSQL), or `undefined`: each engine registers its own. */
  readonly events: OpenEventSource | undefined;
  readonly filters: FiltersPlane;
  /** What the agent sent, for rollback. */
  readonly sent: SentLog;
  /** Told how each connection's catch-up and re-registration sweeps go (the operator console). */
  readonly onProgress?: ((progress: DeliveryProgress) => void) | undefined;
}
