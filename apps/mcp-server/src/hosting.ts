import { ALL_STREAMS, escapeMsgName, type Logger } from '@zmcp/core';
import { type BoundTool, selectTools, type ToolSelection, toolDefinitions } from '@zmcp/tools';
import { type AuditLog, auditTarget } from './audit.js';
import type { Config } from './config.js';
import { type AgentSessionServices, buildServices, instructionsFor, type Services } from './services.js';
import type { TokenInfo } from './tokens.js';

// One person's services on a hosted server: what their token serves, built on the one spine
// (`buildServices` → `openZulipRuntime`) with the person's own key. Two identities, never mixed:
// every tool that only reads runs on the person's runtime (their private streams, DMs and unread
// state); every tool that writes runs on exactly one writer, chosen by the operator per token:
// the organization's bot (the process's own services) or the person. When the bot writes, the
// person's runtime is opened read-only, so its client refuses every non-GET at the transport and
// nothing can ever be written with the person's key. The teammate loop and the monitor (session
// tools: they post, react, type and run an event queue) belong to the writer. Every write is
// audited and its result says who it was done as.

/** Who a write was done as, as a result and the audit log say it. */
interface Writer {
  identity: 'bot' | 'person';
  userId: number;
  fullName: string;
}

/** A write tool whose result names who it was done as, and which is audited. */
function attributed(
  tool: BoundTool,
  writer: Writer,
  token: TokenInfo,
  realm: string,
  audit: AuditLog,
  logger: Logger,
): BoundTool {
  const who =
    writer.identity === 'bot'
      ? `as ${escapeMsgName(writer.fullName)} (user ${writer.userId}), the organization’s bot`
      : `as ${escapeMsgName(writer.fullName)} (user ${writer.userId}), yourself`;
  return {
    definition: tool.definition,
    async run(input, context) {
      const result = await tool.run(input, context);
      await audit
        .record({
          kind: 'tool',
          realm,
          action: tool.definition.name,
          outcome: result.isError === true ? result.code : 'ok',
          token: { id: token.id, label: token.label },
          userId: token.userId,
          postedAs: { identity: writer.identity, userId: writer.userId },
          target: auditTarget(input),
        })
        .catch((err: unknown) => logger.error('could not write the audit log', { err }));
      if (result.isError === true) return result;
      return { ...result, text: `${result.text}\nDone ${who}.` };
    },
  };
}

/** The long waits one token holds now (one count per token per process, shared by its sessions). */
interface WaitSlots {
  open: number;
  readonly max: number;
}

/**
 * A tool that waits on purpose (`listen`), counted against the token's long waits however it is
 * called (a plain call, or a 2026-era task that outlives its request): past the cap it is a tool
 * error the model can act on.
 */
function waitLimited(
  tool: BoundTool,
  slots: WaitSlots,
  lease: (() => Promise<(() => Promise<void>) | undefined>) | undefined,
): BoundTool {
  const refused = {
    isError: true as const,
    code: 'MCP_TOO_MANY_WAITS',
    text: `This token already holds ${slots.max} long waits (ZMCP_TOKEN_MAX_WAITS): end one (end_session, or let a listen return) before starting another.`,
  };
  return {
    definition: tool.definition,
    async run(input, context) {
      if (slots.open >= slots.max) return refused;
      slots.open++;
      try {
        // In a fleet the cap holds across its processes: a lease in the fleet's database.
        const release = lease === undefined ? undefined : await lease();
        if (lease !== undefined && release === undefined) return refused;
        try {
          return await tool.run(input, context);
        } finally {
          await release?.();
        }
      } finally {
        slots.open--;
      }
    },
  };
}

/**
 * Builds the services one person's token serves: the person's runtime (read-only unless the
 * token writes as the person, or the server is read-only), the realm's read tools on it, the write
 * tools of the chosen writer, and the writer's agent sessions; all within the token's toolsets
 * (and the server's).
 */
export async function personServices(options: {
  config: Config;
  /** The process's own services: the organization's bot. */
  bot: Services;
  token: TokenInfo;
  apiKey: string;
  audit: AuditLog;
  /**
   * The token's cap on long waits, the tools that wait, and (in a fleet) the lease that counts a
   * wait on every process: `undefined` when the token holds `max` across the fleet already.
   */
  waits: {
    max: number;
    tools: readonly string[];
    lease?: (() => Promise<(() => Promise<void>) | undefined>) | undefined;
  };
  logger: Logger;
}): Promise<Services & { waiting(): number }> {
  const { config, bot, token, audit, logger } = options;
  const writesAsPerson = token.writeAs === 'person' && !config.readOnly;
  const readOnly = config.readOnly || token.writeAs === 'none';
  // What the operator serves at all (ZULIP_TOOLSETS) bounds what any token serves.
  const toolsets = token.toolsets.filter((t) => config.toolsets.includes(t));
  const person = await buildServices(
    {
      ...config,
      toolsets,
      // The person's key writes only when the token writes as them: read-only at the transport otherwise.
      readOnly: !writesAsPerson,
      // The write policy is the writer's: the person's runtime has one only when it writes.
      ...(writesAsPerson ? {} : { writeStreams: undefined, writeDms: undefined }),
      // What the person may read is what Zulip lets them read: their private streams and DMs.
      privateStreams: ALL_STREAMS,
      admissionList: undefined,
      claudeChannels: { enabled: false, permissionRelay: false },
    },
    logger,
    { site: bot.account.site, email: token.email, apiKey: options.apiKey, source: { kind: 'env' } },
  );
  const selection: ToolSelection = { toolsets, readOnly };
  const slots: WaitSlots = { open: 0, max: options.waits.max };
  const writer: Writer = writesAsPerson
    ? { identity: 'person', userId: token.userId, fullName: token.fullName }
    : { identity: 'bot', userId: bot.account.userId, fullName: bot.account.fullName };
  const writerServices = writesAsPerson || readOnly ? person : bot;
  const reads = person.tools.filter((t) => !t.definition.write);
  const writes = readOnly
    ? []
    : selectTools(
        writerServices.tools.filter((t) => t.definition.write),
        selection,
      ).map((t) => attributed(t, writer, token, bot.account.site, audit, logger));
  const identityLine = readOnly
    ? `You read as ${escapeMsgName(token.fullName)} (user ${token.userId}); nothing can be written with this token.`
    : `You read as ${escapeMsgName(token.fullName)} (user ${token.userId}); everything you post, react or edit is done as ${escapeMsgName(writer.fullName)} (user ${writer.userId})${writer.identity === 'bot' ? ', the organization’s bot' : ''}.`;
  // The instructions of what this token serves (the person's runtime may be read-only while the bot writes).
  const served = new Set(selectTools(toolDefinitions(), selection).map((d) => d.name));
  return {
    tools: [...reads, ...writes],
    instructions: `${identityLine}\n${instructionsFor({ readOnly }, { full_name: token.fullName }, served)}`,
    channels: undefined,
    // A person's HTTP sessions serve no permission prompt (ZULIP_PERMISSION_PROMPT is the launcher's, on stdio).
    endApprovals: async () => undefined,
    state: bot.state,
    account: person.account,
    maxRequestBytes: bot.maxRequestBytes,
    openSession(sessionOptions): AgentSessionServices {
      const opened = writerServices.openSession(sessionOptions);
      return {
        ...opened,
        tools: selectTools(opened.tools, selection).map((t) => {
          const limited = options.waits.tools.includes(t.definition.name)
            ? waitLimited(t, slots, options.waits.lease)
            : t;
          return t.definition.write
            ? attributed(limited, writer, token, bot.account.site, audit, logger)
            : limited;
        }),
        close: () => opened.close(),
      };
    },
    close: () => person.close(),
    /** The long waits this token holds now (its services are not idle while one runs). */
    waiting: () => slots.open,
  };
}
