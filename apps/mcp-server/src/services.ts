import { stat } from 'node:fs/promises';
import type { Credentials, Logger } from '@zmcp/core';
import {
  type DeliveryProgress,
  FileStateStore,
  MemoryStateStore,
  MonitorStore,
  MonitorWatcher,
  type StateStore,
} from '@zmcp/delivery';
import { instructionLines, openZulipRuntime, type ZulipRuntime } from '@zmcp/server-kit';
import {
  type AgentSession,
  ApprovalDesk,
  type BoundTool,
  createAgentSession,
  createCatalog,
  monitorCatalog,
  type PromptDefinition,
  permissionPromptTools,
  type ResourceChanges,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  selectTools,
  sessionCatalog,
  type ToolSelection,
  toolDefinitions,
} from '@zmcp/tools';
import { maxInlineAttachmentChars } from '@zmcp/uploads';
import { type ClaudeChannels, createClaudeChannels } from './channels.js';
import type { Config } from './config.js';

/** Room in a request for everything beside its inline attachments: the message text, names, JSON. */
export const REQUEST_OVERHEAD_BYTES = 1024 * 1024;

/** What the app serves: the tool catalog, the instructions for the model, and how to release it all. */
export interface Services {
  /** The realm tools every session shares (toolsets and read-only mode applied); {@link openSession} adds each session's own. */
  tools: BoundTool[];
  /** The MCP `instructions`; clients may cut them at 2 KB, so key facts come first. */
  instructions: string;
  /**
   * Largest JSON-RPC message the transports take, in bytes: room for every inline attachment the
   * upload limits allow in one message (base64), plus {@link REQUEST_OVERHEAD_BYTES} for the rest.
   */
  maxRequestBytes: number;
  /**
   * Opens one agent session (one per MCP session): the teammate tools and prompt bound to it, and
   * its unread tracking (the monitor tools and resources over read cursors of its own).
   * `launched` binds it to the conversation a launcher named (`SESSION_STREAM`, `SESSION_TOPIC`,
   * `TRIGGER_MESSAGE_ID`); only the stdio session, the launcher's own, is. `cursors: 'durable'`
   * keeps the cursors of `stateSession` (default `ZULIP_SESSION_ID`) under the state directory
   * (the stdio session; a 2026-era HTTP session, keyed by its handle); `'session'` gives the
   * session cursors of its own that end with it (each 2025-era HTTP session).
   */
  openSession(options: {
    launched: boolean;
    cursors: 'durable' | 'session';
    stateSession?: string | undefined;
  }): AgentSessionServices;
  /** The Claude Code channel bridge of the stdio session, when `ZULIP_CLAUDE_CHANNELS` is on. */
  channels: ClaudeChannels | undefined;
  /**
   * Denies every approval still waiting (each prompt edited to say the agent ended): called as the
   * stdio client goes away, so a permission prompt waits for no one. Safe to call twice.
   */
  endApprovals(): Promise<void>;
  /** The state store every process sharing the state directory reads, and this realm and bot's key in it. */
  state: { store: StateStore; account: string; backend: ZulipRuntime['backend'] };
  /** The realm's URL and the account the services act as. */
  account: { site: string; userId: number; email: string; fullName: string };
  /** Closes the sessions still open, then connections, timers and files; called once at shutdown. */
  close(): Promise<void>;
}

/** What one agent session adds to the catalog, and how to end it. */
export interface AgentSessionServices {
  /** The agent session the session tools are bound to (its state, snapshot and restore). */
  session: AgentSession;
  /** The session tools this server serves, bound to this session. */
  tools: BoundTool[];
  prompts: PromptDefinition[];
  /** `zulip://unread/summary` and `zulip://monitoring/status`, over this session's cursors. */
  resources: ResourceDefinition[];
  /** `zulip://channel/{stream}/unread`. */
  resourceTemplates: ResourceTemplateDefinition[];
  /** Which of the session's resources changed; its event queue runs only while it has a subscription. */
  resourceChanges: ResourceChanges;
  /** Stops its event queue, removes the listening indicator and stops typing; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Says so when the session has a monitor file of the layout before state was kept per realm
 * and bot (`<state dir>/<session>.json`) but none under its account yet. That file is not read:
 * nothing says which realm its cursors belong to. It is left as it was.
 */
async function noticeUnscopedState(
  store: FileStateStore,
  account: string,
  session: string,
  logger: Logger,
): Promise<void> {
  const unscoped = store.pathOf({ session, kind: 'monitor' });
  const scoped = store.pathOf({ account, session, kind: 'monitor' });
  const exists = async (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );
  if ((await exists(unscoped)) && !(await exists(scoped))) {
    logger.warn(
      'state from before per-realm state is not read: its realm is unknown; move it into the account folder if it belongs to this realm and bot',
      { file: unscoped, moveTo: scoped },
    );
  }
}

/**
 * What the model is told at `initialize`: the key facts first, since clients may cut it at 2 KB.
 * It names only tools this server serves, and describes the text the model really reads (in
 * clients that show `structuredContent`, the same text is its `text` field).
 */
export function instructionsFor(
  config: Pick<Config, 'readOnly'>,
  identity: { full_name: string },
  served: ReadonlySet<string>,
): string {
  const lines = instructionLines(identity, (tool) => served.has(tool));
  if (config.readOnly) lines.push('This server is read-only: nothing can be sent, edited or reacted to.');
  else if (['set_context', 'reply', 'listen', 'end_session'].every((t) => served.has(t))) {
    lines.push(
      'When someone @mentions you, set_context on that conversation, reply, then listen for follow-ups; end_session when you are done or dismissed (the zulip_teammate prompt explains).',
    );
  }
  if (served.has('send_message') && served.has('find_user')) {
    lines.push('Mention someone with @**Full Name|id** (find_user gives the id).');
  }
  return lines.join('\n');
}

/**
 * Builds the services of one process from its configuration: the Zulip runtime
 * (`@zmcp/server-kit`'s `openZulipRuntime`: credentials given or loaded as configured, the one
 * client with read-only enforced in its transport, the account and the realm's limits, the access
 * policy, the upload roots, the tool services and the state store), then the tool catalog, the
 * instructions, the Claude Code channels when enabled, and each session's monitor (read cursors
 * under `stateDir`, keyed by realm, bot and `sessionId`) with its resources.
 *
 * @throws `CORE_CONFIG_INVALID` for missing or malformed credentials, `UPLOAD_ROOT_MISSING`
 *   for an upload root that does not exist, `DELIVERY_INVALID_SESSION_ID` for a bad session
 *   id, and the client's request codes when the realm cannot be reached or refuses the
 *   credentials.
 */
export async function buildServices(
  config: Config,
  logger: Logger,
  credentials?: Credentials,
  onProgress?: (progress: DeliveryProgress) => void,
): Promise<Services> {
  const runtime = await openZulipRuntime({ settings: config, logger, credentials });
  const { client, services, policy, store, account, identity } = runtime;
  try {
    if (store instanceof FileStateStore) await noticeUnscopedState(store, account, config.sessionId, logger);
    const sessions = new Set<AgentSessionServices>();
    const selection: ToolSelection = { toolsets: config.toolsets, readOnly: config.readOnly };
    const served = new Set(selectTools(toolDefinitions(), selection).map((d) => d.name));
    const servesSession = config.toolsets.includes('session');
    // The one approvals desk of the process: permission_prompt and the channels' relay ask through it.
    const desk =
      config.session.permissionPrompt ||
      (config.claudeChannels.enabled && config.claudeChannels.permissionRelay)
        ? new ApprovalDesk(services, { admission: runtime.admission, logger })
        : undefined;
    const channels = config.claudeChannels.enabled
      ? await createClaudeChannels({
          client,
          policy,
          services,
          backend: runtime.backend,
          account,
          sessionId: config.sessionId,
          admission: runtime.admission,
          approvals: config.claudeChannels.permissionRelay ? desk : undefined,
          toolsets: config.toolsets,
          logger,
          onProgress,
        })
      : undefined;
    const instructions = instructionsFor(config, identity, served);
    return {
      tools: selectTools(createCatalog(services), selection),
      instructions: channels === undefined ? instructions : `${instructions}\n${channels.instructions}`,
      channels,
      endApprovals: async () => {
        await desk?.close();
      },
      state: { store, account, backend: runtime.backend },
      account: {
        site: client.site,
        userId: identity.user_id,
        email: identity.email,
        fullName: identity.full_name,
      },
      maxRequestBytes: maxInlineAttachmentChars(services.maxFileBytes) + REQUEST_OVERHEAD_BYTES,
      openSession({ launched, cursors, stateSession }) {
        const launch = config.session.launch;
        const agent = createAgentSession(services, {
          dismissEmoji: config.session.dismissEmoji,
          listenEmoji: config.session.listenEmoji,
          interruptFile: config.session.interruptFile,
          autoTyping: config.session.autoTyping,
          launch: launched && launch !== undefined ? launch : undefined,
          admission: runtime.admission,
          logger,
        });
        const catalog = sessionCatalog(services, agent);
        const prompting =
          config.session.permissionPrompt && desk !== undefined && !config.readOnly
            ? permissionPromptTools(agent, desk)
            : [];
        // The session's own read cursors: the durable ones of ZULIP_SESSION_ID, or a set that
        // lives and dies with this MCP session, so no client can read or stop another's.
        const monitor = new MonitorStore(cursors === 'durable' ? store : new MemoryStateStore(), {
          account,
          session: stateSession ?? config.sessionId,
        });
        const watcher = new MonitorWatcher({ client, monitor, selfUserId: identity.user_id, logger });
        const monitoring = monitorCatalog(services, monitor, watcher);
        let closed: Promise<void> | undefined;
        const opened: AgentSessionServices = {
          session: agent,
          tools: [...selectTools([...monitoring.tools, ...catalog.tools], selection), ...prompting],
          prompts: servesSession ? catalog.prompts : [],
          resources: monitoring.resources,
          resourceTemplates: monitoring.resourceTemplates,
          resourceChanges: monitoring.changes,
          close() {
            closed ??= (async () => {
              sessions.delete(opened);
              await Promise.allSettled([watcher.close(), agent.close()]);
            })();
            return closed;
          },
        };
        sessions.add(opened);
        return opened;
      },
      async close() {
        await Promise.all([...sessions].map((session) => session.close()));
        await channels?.close();
        await desk?.close();
        await runtime.close();
      },
    };
  } catch (err) {
    await runtime.close();
    throw err;
  }
}
