import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ReadResourceResult,
  type ServerNotification,
  type ServerRequest,
  SubscribeRequestSchema,
  type Tool,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { errorCode } from '@zmcp/core';
import {
  type BoundTool,
  describeInvalidInput,
  isToolError,
  type PromptDefinition,
  type ResourceChanges,
  type ResourceContents,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  ToolHost,
  type ToolListing,
  toMcpResult,
} from '@zmcp/tools';
import { serveToolCallsDirectly, type ToolCallHandler } from './direct-calls.js';
import { type Logger, silentLogger } from './logging.js';
import { LineStdioTransport } from './stdio.js';

/** Options of {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /** Server name reported in `initialize`. */
  name: string;
  /** Server version reported in `initialize`. */
  version: string;
  /** Instructions for the model, sent in `initialize`; clients may cut them at 2 KB. */
  instructions?: string | undefined;
  /** The tools to serve, already selected (toolsets, read-only mode) and bound to their services. */
  tools: readonly BoundTool[];
  logger?: Logger | undefined;
  /** One deadline shared by all the work of a tool call (and of a resource read), in milliseconds. */
  deadlineMs: number;
  /** See `ToolHostOptions.graceMs`. Default 1000. */
  deadlineGraceMs?: number | undefined;
  /** How many write-tool request ids a session remembers for de-duplication. Default 1024. */
  dedupCapacity?: number | undefined;
  /** Fixed-URI resources to serve (`zulip://unread/summary`, ...). */
  resources?: readonly ResourceDefinition[] | undefined;
  /** Resource templates to serve (`zulip://channel/{stream}/unread`); each lists its resources. */
  resourceTemplates?: readonly ResourceTemplateDefinition[] | undefined;
  /** Prompt templates to serve. */
  prompts?: readonly PromptDefinition[] | undefined;
  /**
   * Which resource URIs changed. With it, clients may subscribe to resources: a session is
   * sent `notifications/resources/updated` only for the URIs it subscribed to, and it listens
   * to `resourceChanges` only while it has a subscription.
   */
  resourceChanges?: ResourceChanges | undefined;
  /** Members of `capabilities.experimental` (Claude Code channels declare `claude/channel`). */
  experimental?: Record<string, Record<string, never>> | undefined;
  /** Called with the SDK server once its handlers are set, for notification handlers an app adds. */
  setup?: ((server: Server) => void) | undefined;
}

/** One MCP session's server, as the transports drive it. */
export interface McpSession {
  /** The SDK's low-level server; transports connect to it through {@link McpSession.connect}. */
  readonly server: Server;
  /** Called once when the session's transport closed (after its subscriptions were released). */
  onclose: (() => void) | undefined;
  /** Called with protocol errors (malformed messages, failed sends). */
  onerror: ((error: Error) => void) | undefined;
  connect(transport: Transport): Promise<void>;
  close(): Promise<void>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const instructionsSoftLimit = 2048;
/** MCP's error code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

/** A tool as MCP's tools/list shows it. */
function mcpTool(listing: ToolListing): Tool {
  return {
    name: listing.name,
    title: listing.title,
    description: listing.description,
    inputSchema: listing.inputSchema,
    outputSchema: listing.outputSchema,
    annotations: listing.annotations,
  };
}

/** One URI as the server compares them: parsed and re-serialized, so equivalent spellings match. */
function normalizeUri(uri: string): string | undefined {
  try {
    return new URL(uri).toString();
  } catch {
    return undefined;
  }
}

/** Turns a failure to read a resource into the protocol error a client gets; messages are safe. */
function resourceError(err: unknown, uri: string): McpError {
  if (err instanceof McpError) return err;
  const code = errorCode(err);
  const message = (err as { message?: unknown }).message;
  if (code !== undefined && typeof message === 'string' && /^(CORE|TOOLS|DELIVERY)_/.test(code)) {
    if (code === 'TOOLS_NOT_FOUND') return new McpError(RESOURCE_NOT_FOUND, message, { uri });
    if (code === 'TOOLS_INVALID_INPUT') return new McpError(ErrorCode.InvalidParams, message, { uri });
    return new McpError(ErrorCode.InternalError, `${code}: ${message}`, { uri, code });
  }
  return new McpError(ErrorCode.InternalError, `Resource ${uri} could not be read.`, { uri });
}

/** The template's variables, URI-decoded; a malformed escape is the client's error. */
function decodeVariables(variables: Record<string, string | string[]>, uri: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(variables)) {
    const raw = Array.isArray(value) ? value.join(',') : value;
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      throw new McpError(ErrorCode.InvalidParams, `Resource URI ${uri} has a malformed escape in {${name}}.`);
    }
  }
  return out;
}

/**
 * Builds one MCP session (one per client) on the SDK's low-level `Server`: a transport adapter
 * over `@zmcp/tools`' call contract. tools/list lists the tools (schemas converted once and shared
 * by every session); tools/call hands the call to one `ToolHost` with the client's cancellation,
 * progress token and request id, and renders the outcome for MCP. An unknown tool is a protocol
 * error (`-32602`), as is a write request id reused for other arguments (`-32600`). Resources,
 * resource templates (listed and read with their variables URI-decoded) and prompts are served
 * when given; with `resourceChanges`, clients may subscribe to resources and each session is
 * notified only of the URIs it subscribed to, until its transport closes. On the server's own
 * stdio transport, tools/call is served beside the SDK's `Protocol` (see `direct-calls.ts`).
 *
 * @throws ToolError `TOOLS_INVALID_CATALOG` when two tools share a name or a name is not valid.
 */
export function createMcpServer(options: CreateMcpServerOptions): McpSession {
  const logger = options.logger ?? silentLogger;
  const host = new ToolHost(options.tools, {
    deadlineMs: options.deadlineMs,
    graceMs: options.deadlineGraceMs,
    dedupCapacity: options.dedupCapacity,
    logger,
  });
  if (options.instructions !== undefined && Buffer.byteLength(options.instructions) > instructionsSoftLimit) {
    logger.warn('instructions exceed 2 KB; some clients cut them', {
      bytes: Buffer.byteLength(options.instructions),
    });
  }
  const resources = options.resources ?? [];
  const templates = options.resourceTemplates ?? [];
  const prompts = options.prompts ?? [];
  const servesResources = resources.length > 0 || templates.length > 0;
  const subscribable = servesResources && options.resourceChanges !== undefined;

  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities: {
        tools: { listChanged: false },
        ...(servesResources ? { resources: { subscribe: subscribable, listChanged: false } } : {}),
        ...(prompts.length > 0 ? { prompts: { listChanged: false } } : {}),
        ...(options.experimental === undefined ? {} : { experimental: options.experimental }),
      },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    },
  );
  const handle: Server['setRequestHandler'] = (schema, handler) => server.setRequestHandler(schema, handler);

  const listing = host.listing().map(mcpTool);
  handle(ListToolsRequestSchema, () => ({ tools: listing }));
  const callTool: ToolCallHandler = async (params, extra) => {
    const { name, arguments: args } = params;
    logger.debug('tool call started', { tool: name, args });
    const progressToken = extra._meta?.progressToken;
    try {
      const outcome = await host.call(name, args, {
        requestId: extra.requestId,
        signal: extra.signal,
        progress:
          progressToken === undefined
            ? undefined
            : (update) =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, ...update },
                }),
      });
      return toMcpResult(outcome) satisfies CallToolResult;
    } catch (err) {
      if (isToolError(err, 'TOOLS_UNKNOWN_TOOL')) throw new McpError(ErrorCode.InvalidParams, err.message);
      if (isToolError(err, 'TOOLS_REQUEST_ID_REUSED'))
        throw new McpError(ErrorCode.InvalidRequest, err.message);
      throw err;
    }
  };
  handle(CallToolRequestSchema, (request, extra) => callTool(request.params, extra));

  if (servesResources) serveResources(handle, resources, templates, options.deadlineMs);
  if (prompts.length > 0) servePrompts(handle, prompts);
  const subscriptions = subscribable
    ? serveSubscriptions(
        server,
        handle,
        resources,
        templates,
        options.resourceChanges as ResourceChanges,
        logger,
      )
    : undefined;

  options.setup?.(server);
  const session: McpSession = {
    server,
    onclose: undefined,
    onerror: undefined,
    connect: async (transport) => {
      await server.connect(transport);
      // The server's own stdio transport: tools/call is served beside the SDK's Protocol.
      if (transport instanceof LineStdioTransport) {
        serveToolCallsDirectly(transport, callTool, (err) => server.onerror?.(err));
      }
    },
    close: () => server.close(),
  };
  server.onclose = () => {
    void subscriptions
      ?.release()
      .catch((err: unknown) => logger.debug('releasing resource subscriptions failed', { err }));
    session.onclose?.();
  };
  server.onerror = (err) => session.onerror?.(err);
  return session;
}

type Handle = Server['setRequestHandler'];

/** resources/list, resources/templates/list and resources/read; each read runs under the tool deadline. */
function serveResources(
  handle: Handle,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  deadlineMs: number,
): void {
  const signalFor = (extra: Extra) => AbortSignal.any([extra.signal, AbortSignal.timeout(deadlineMs)]);
  const answer = (uri: string, contents: ResourceContents): ReadResourceResult => ({
    contents: [{ uri, mimeType: contents.mimeType, text: contents.text }],
  });
  const fixed = new Map(resources.map((r) => [normalizeUri(r.uri) ?? r.uri, r]));
  const patterns = templates.map((t) => ({ template: t, pattern: new UriTemplate(t.uriTemplate) }));

  handle(ListResourcesRequestSchema, async (_request, extra) => {
    const listed = resources.map((r) => ({
      uri: r.uri,
      name: r.name,
      title: r.title,
      description: r.description,
      mimeType: r.mimeType,
    }));
    for (const t of templates) {
      try {
        for (const r of await t.list({ signal: signalFor(extra) })) {
          listed.push({
            uri: r.uri,
            name: r.name,
            title: t.title,
            description: t.description,
            mimeType: t.mimeType,
          });
        }
      } catch (err) {
        throw resourceError(err, t.uriTemplate);
      }
    }
    return { resources: listed };
  });
  handle(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: templates.map((t) => ({
      uriTemplate: t.uriTemplate,
      name: t.name,
      title: t.title,
      description: t.description,
      mimeType: t.mimeType,
    })),
  }));
  handle(ReadResourceRequestSchema, async (request, extra) => {
    const uri = request.params.uri;
    const normalized = normalizeUri(uri);
    const resource = normalized === undefined ? undefined : fixed.get(normalized);
    try {
      if (resource !== undefined) return answer(uri, await resource.read({ signal: signalFor(extra) }));
      for (const { template, pattern } of patterns) {
        const variables = pattern.match(uri);
        if (variables === null) continue;
        const decoded = decodeVariables(variables, uri);
        return answer(uri, await template.read(uri, decoded, { signal: signalFor(extra) }));
      }
    } catch (err) {
      throw resourceError(err, uri);
    }
    throw new McpError(RESOURCE_NOT_FOUND, `Resource ${uri} not found`, { uri });
  });
}

/** prompts/list and prompts/get, with the arguments validated by the prompt's zod schema. */
function servePrompts(handle: Handle, prompts: readonly PromptDefinition[]): void {
  const byName = new Map(prompts.map((p) => [p.name, p]));
  handle(ListPromptsRequestSchema, () => ({
    prompts: prompts.map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: Object.entries(p.argsSchema.shape).map(([name, schema]) => ({
        name,
        ...((schema as { description?: string }).description === undefined
          ? {}
          : { description: (schema as { description: string }).description }),
        required: !(schema as { safeParse(v: unknown): { success: boolean } }).safeParse(undefined).success,
      })),
    })),
  }));
  handle(GetPromptRequestSchema, (request) => {
    const prompt = byName.get(request.params.name);
    if (prompt === undefined)
      throw new McpError(ErrorCode.InvalidParams, `Prompt ${request.params.name} not found`);
    const parsed = prompt.argsSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success) throw new McpError(ErrorCode.InvalidParams, describeInvalidInput(parsed.error));
    const rendered = prompt.render(parsed.data);
    return {
      ...(rendered.description === undefined ? {} : { description: rendered.description }),
      messages: rendered.messages.map((m) => ({
        role: m.role,
        content: { type: 'text' as const, text: m.text },
      })),
    };
  });
}

/**
 * resources/subscribe and resources/unsubscribe for one session: `notifications/resources/updated`
 * goes out only for the URIs it subscribed to, and the session listens to `changes` only while it
 * holds a subscription. `release` drops them all (the transport closed).
 */
function serveSubscriptions(
  server: Server,
  handle: Handle,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  changes: ResourceChanges,
  logger: Logger,
): { release(): Promise<void> } {
  const fixed = new Set(resources.map((r) => normalizeUri(r.uri) ?? r.uri));
  const patterns = templates.map((t) => new UriTemplate(t.uriTemplate));
  const known = (uri: string) => fixed.has(uri) || patterns.some((p) => p.match(uri) !== null);
  const subscribed = new Set<string>();
  let stop: (() => void) | undefined;

  const release = async () => {
    subscribed.clear();
    const stopping = stop;
    stop = undefined;
    await stopping?.();
  };

  handle(SubscribeRequestSchema, async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri === undefined || !known(uri)) {
      throw new McpError(RESOURCE_NOT_FOUND, `Resource ${request.params.uri} not found`, {
        uri: request.params.uri,
      });
    }
    subscribed.add(uri);
    stop ??= changes.subscribe((changed) => {
      const target = normalizeUri(changed);
      if (target === undefined || !subscribed.has(target) || server.transport === undefined) return;
      server
        .sendResourceUpdated({ uri: target })
        .catch((err: unknown) => logger.debug('resource update notification failed', { uri: target, err }));
    });
    logger.debug('resource subscribed', { uri });
    return {};
  });

  handle(UnsubscribeRequestSchema, async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri !== undefined) subscribed.delete(uri);
    // The last subscription gone, the session stops listening (the event queue may stop with it).
    if (subscribed.size === 0) await release();
    logger.debug('resource unsubscribed', { uri: request.params.uri });
    return {};
  });

  return { release };
}
