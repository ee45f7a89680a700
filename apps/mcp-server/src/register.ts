import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ReadResourceResult,
  type ServerNotification,
  type ServerRequest,
  SubscribeRequestSchema,
  type Tool,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  failureFromError,
  type PromptDefinition,
  type ResourceChanges,
  type ResourceContents,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  runTool,
  type ToolDefinition,
  type ToolResult,
  toolFailure,
} from '@zmcp/tools';
import { z } from 'zod';
import { McpServerError } from './errors.js';
import { type Logger, silentLogger } from './logging.js';
import { RequestDeduplicator, RequestIdReusedError } from './request-dedup.js';

/** Options of {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /** Server name reported in `initialize`. */
  name: string;
  /** Server version reported in `initialize`. */
  version: string;
  /** Instructions for the model, sent in `initialize`; clients may cut them at 2 KB. */
  instructions?: string | undefined;
  /** The tool catalog to serve. */
  tools: readonly ToolDefinition[];
  /** Hide (do not register) every tool marked `write`. */
  readOnly: boolean;
  logger?: Logger | undefined;
  /** One deadline shared by all the work of a tool call, in milliseconds. */
  deadlineMs: number;
  /**
   * How long a tool whose deadline passed may still take to return before the call is
   * answered with a deadline failure anyway, in milliseconds. Default 1000.
   */
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
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;
const instructionsSoftLimit = 2048;

function toCallToolResult(result: ToolResult<Record<string, unknown>>): CallToolResult {
  if (result.isError === true) return { content: [{ type: 'text', text: result.text }], isError: true };
  const images = (result.images ?? []).map((image) => ({
    type: 'image' as const,
    data: image.data,
    mimeType: image.mimeType,
  }));
  return { content: [{ type: 'text', text: result.text }, ...images], structuredContent: result.structured };
}

/**
 * Resolves with `work`, or, once `signal` has fired and `graceMs` more have passed, with
 * `onLate()`: a handler that ignores its signal cannot hold a call past its deadline.
 */
function settleWithin<T>(
  work: Promise<T>,
  signal: AbortSignal,
  graceMs: number,
  onLate: () => T,
): Promise<T> {
  return new Promise<T>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => resolve(onLate()), graceMs);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    void work.then(resolve).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    });
  });
}

/** The call's one deadline: the tool's own for a tool that waits on purpose, else the shared one. */
function deadlineFor(tool: ToolDefinition, args: unknown, shared: number): number {
  if (tool.deadlineMs === undefined) return shared;
  const parsed = tool.inputSchema.safeParse(args ?? {});
  return parsed.success ? tool.deadlineMs(parsed.data) : shared;
}

// JSON Schemas converted once per zod schema and shared by every session and every catalog built
// from the same tool modules: converting some thirty tools' schemas costs a cold start dearly.
const inputSchemas = new WeakMap<z.ZodObject, Tool['inputSchema']>();
const outputSchemas = new WeakMap<z.ZodObject, NonNullable<Tool['outputSchema']>>();

function jsonSchemas(tool: ToolDefinition): {
  input: Tool['inputSchema'];
  output: NonNullable<Tool['outputSchema']>;
} {
  let input = inputSchemas.get(tool.inputSchema);
  if (input === undefined) {
    input = z.toJSONSchema(tool.inputSchema, { target: 'draft-7', io: 'input' }) as Tool['inputSchema'];
    inputSchemas.set(tool.inputSchema, input);
  }
  let output = outputSchemas.get(tool.outputSchema);
  if (output === undefined) {
    output = z.toJSONSchema(tool.outputSchema, { target: 'draft-7', io: 'output' }) as NonNullable<
      Tool['outputSchema']
    >;
    outputSchemas.set(tool.outputSchema, output);
  }
  return { input, output };
}

/** A tool as tools/list shows it, with its zod schemas as JSON Schema (draft 7, as the SDK emits). */
function toolListing(tool: ToolDefinition): Tool {
  const { input, output } = jsonSchemas(tool);
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: input,
    outputSchema: output,
    annotations: { title: tool.title, ...tool.annotations },
  };
}

/**
 * Converts the tools' schemas for tools/list ahead of the first listing, one tool per turn of the
 * event loop, so the work fits in the gaps while start-up waits on the network.
 */
export async function warmToolSchemas(tools: readonly ToolDefinition[]): Promise<void> {
  for (const tool of tools) {
    jsonSchemas(tool);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** MCP's error code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

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
  const code = (err as { code?: unknown }).code;
  const message = (err as { message?: unknown }).message;
  if (typeof code === 'string' && typeof message === 'string') {
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
 * Builds one MCP server (one per session) serving the given tool catalog: tools/list
 * advertises each tool's title, description, input and output JSON schemas and
 * annotations; tools/call runs it under one shared deadline, forwards progress when the
 * client asked for it, and answers JSON text plus `structuredContent`, or `isError` with a
 * hint. Invalid arguments are tool errors naming the field; an unknown tool is a protocol
 * error (`-32602`). A retried write request (same JSON-RPC id in this session) is answered
 * with the first result and never runs twice. Read-only mode registers no write tool.
 * Resources, resource templates (listed and read with their variables URI-decoded) and
 * prompts are registered when given; with `resourceChanges`, clients may subscribe to
 * resources and each session is notified only of the URIs it subscribed to.
 *
 * @throws McpServerError `MCP_CATALOG_INVALID` when two tools share a name or a name is
 * not 1-128 of `A-Z a-z 0-9 _ . -`.
 */
export function createMcpServer(options: CreateMcpServerOptions): McpServer {
  const logger = options.logger ?? silentLogger;
  const graceMs = options.deadlineGraceMs ?? 1000;
  const served = options.tools.filter((tool) => !(options.readOnly && tool.write));
  const byName = new Map<string, ToolDefinition>();
  for (const tool of served) {
    if (!toolNamePattern.test(tool.name)) {
      throw new McpServerError('MCP_CATALOG_INVALID', `tool name ${JSON.stringify(tool.name)} is not valid`);
    }
    if (byName.has(tool.name)) {
      throw new McpServerError('MCP_CATALOG_INVALID', `two tools are named ${tool.name}`);
    }
    byName.set(tool.name, tool);
  }
  if (options.instructions !== undefined && Buffer.byteLength(options.instructions) > instructionsSoftLimit) {
    logger.warn('instructions exceed 2 KB; some clients cut them', {
      bytes: Buffer.byteLength(options.instructions),
    });
  }

  const resources = options.resources ?? [];
  const resourceTemplates = options.resourceTemplates ?? [];
  const servesResources = resources.length > 0 || resourceTemplates.length > 0;

  const server = new McpServer(
    { name: options.name, version: options.version },
    {
      // Declaring the capability installs the tool handlers even for an empty catalog.
      capabilities: {
        tools: { listChanged: false },
        ...(servesResources
          ? { resources: { subscribe: options.resourceChanges !== undefined, listChanged: true } }
          : {}),
      },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    },
  );

  // tools/list is answered from definitions converted once per tool and shared by every
  // session; converting some thirty zod schemas on each listing would cost a cold start dearly.
  const listing = [...byName.values()];
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing.map(toolListing) }));

  const dedup = new RequestDeduplicator<CallToolResult>(options.dedupCapacity ?? 1024);

  const execute = async (tool: ToolDefinition, args: unknown, extra: Extra): Promise<CallToolResult> => {
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The tool call ran past its deadline.', 'TimeoutError')),
      deadlineFor(tool, args, options.deadlineMs),
    );
    const signal = AbortSignal.any([extra.signal, deadline.signal]);
    const progressToken = extra._meta?.progressToken;
    // Progress notifications go out in order, and all before the result.
    let progressSent: Promise<void> = Promise.resolve();
    const progress =
      progressToken === undefined
        ? () => {}
        : (update: { progress: number; total?: number; message?: string }) => {
            progressSent = progressSent
              .then(() =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, ...update },
                }),
              )
              .catch((err: unknown) =>
                logger.debug('progress notification failed', { tool: tool.name, err }),
              );
          };
    const started = performance.now();
    try {
      const result = await settleWithin(
        runTool(tool, args, { signal, progress }).catch((err: unknown) =>
          failureFromError(err, signal, { idempotent: tool.annotations.idempotentHint }),
        ),
        signal,
        graceMs,
        () => failureFromError(signal.reason, signal, { idempotent: tool.annotations.idempotentHint }),
      );
      await progressSent;
      let answer = result as ToolResult<Record<string, unknown>>;
      if (answer.isError !== true && !tool.outputSchema.safeParse(answer.structured).success) {
        logger.error('tool result does not match its output schema', { tool: tool.name });
        answer = toolFailure(
          'TOOLS_INTERNAL',
          'The tool produced a malformed result.',
          'Try again; if it keeps failing, report it.',
        );
      }
      logger.info('tool call', {
        tool: tool.name,
        outcome: answer.isError === true ? 'error' : 'ok',
        code: answer.isError === true ? answer.code : undefined,
        ms: Math.round(performance.now() - started),
      });
      return toCallToolResult(answer);
    } finally {
      clearTimeout(timer);
    }
  };

  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = byName.get(name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    logger.debug('tool call started', { tool: name, id: extra.requestId, args });
    if (!tool.write) return execute(tool, args, extra);
    try {
      return await dedup.run(extra.requestId, JSON.stringify([name, args ?? {}]), () =>
        execute(tool, args, extra),
      );
    } catch (err) {
      if (err instanceof RequestIdReusedError) throw new McpError(ErrorCode.InvalidRequest, err.message);
      throw err;
    }
  });

  registerResources(server, resources, resourceTemplates, options.deadlineMs);
  registerPrompts(server, options.prompts ?? []);
  if (servesResources && options.resourceChanges !== undefined) {
    handleSubscriptions(server, resources, resourceTemplates, options.resourceChanges, logger);
  }

  return server;
}

/** Registers resources and templates; each read runs under the tool deadline and the client's cancel. */
function registerResources(
  server: McpServer,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  deadlineMs: number,
): void {
  const signalFor = (extra: Extra) => AbortSignal.any([extra.signal, AbortSignal.timeout(deadlineMs)]);
  const answer = (uri: string, contents: ResourceContents): ReadResourceResult => ({
    contents: [{ uri, mimeType: contents.mimeType, text: contents.text }],
  });
  for (const resource of resources) {
    server.registerResource(
      resource.name,
      resource.uri,
      { title: resource.title, description: resource.description, mimeType: resource.mimeType },
      async (uri, extra) => {
        try {
          return answer(uri.href, await resource.read({ signal: signalFor(extra) }));
        } catch (err) {
          throw resourceError(err, uri.href);
        }
      },
    );
  }
  for (const template of templates) {
    const list = async (extra: Extra) => {
      try {
        const listed = await template.list({ signal: signalFor(extra) });
        return { resources: listed.map((r) => ({ uri: r.uri, name: r.name, mimeType: template.mimeType })) };
      } catch (err) {
        throw resourceError(err, template.uriTemplate);
      }
    };
    server.registerResource(
      template.name,
      new ResourceTemplate(template.uriTemplate, { list }),
      { title: template.title, description: template.description, mimeType: template.mimeType },
      async (uri, variables, extra) => {
        const decoded = decodeVariables(variables, uri.href);
        try {
          return answer(uri.href, await template.read(uri.href, decoded, { signal: signalFor(extra) }));
        } catch (err) {
          throw resourceError(err, uri.href);
        }
      },
    );
  }
}

/** Registers prompt templates with their zod argument shapes (the SDK validates the arguments). */
function registerPrompts(server: McpServer, prompts: readonly PromptDefinition[]): void {
  for (const prompt of prompts) {
    const render = (args: unknown) => {
      const rendered = prompt.render(args as never);
      return {
        ...(rendered.description === undefined ? {} : { description: rendered.description }),
        messages: rendered.messages.map((m) => ({
          role: m.role,
          content: { type: 'text' as const, text: m.text },
        })),
      };
    };
    // The SDK types prompt arguments as its own zod shape; ours is the same zod, validated by the SDK.
    server.registerPrompt(
      prompt.name,
      { title: prompt.title, description: prompt.description, argsSchema: prompt.argsSchema.shape as never },
      render as never,
    );
  }
}

/**
 * Answers resources/subscribe and resources/unsubscribe for this session (the SDK's McpServer
 * does not), and sends `notifications/resources/updated` for the URIs it subscribed to. The
 * session listens to `changes` only while it holds a subscription, and stops when its
 * transport closes.
 */
function handleSubscriptions(
  server: McpServer,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  changes: ResourceChanges,
  logger: Logger,
): void {
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

  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri === undefined || !known(uri)) {
      throw new McpError(RESOURCE_NOT_FOUND, `Resource ${request.params.uri} not found`, {
        uri: request.params.uri,
      });
    }
    subscribed.add(uri);
    stop ??= changes.subscribe((changed) => {
      const target = normalizeUri(changed);
      if (target === undefined || !subscribed.has(target) || !server.isConnected()) return;
      server.server
        .sendResourceUpdated({ uri: target })
        .catch((err: unknown) => logger.debug('resource update notification failed', { uri: target, err }));
    });
    logger.debug('resource subscribed', { uri });
    return {};
  });

  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri !== undefined) subscribed.delete(uri);
    // The last subscription gone, the session stops listening (the event queue may stop with it).
    if (subscribed.size === 0) await release();
    logger.debug('resource unsubscribed', { uri: request.params.uri });
    return {};
  });

  // A session that ends holds no subscription: release it when its transport closes.
  const connect = server.connect.bind(server);
  server.connect = async (transport: Transport) => {
    await connect(transport);
    const closed = transport.onclose;
    transport.onclose = () => {
      closed?.();
      void release().catch((err: unknown) =>
        logger.debug('releasing resource subscriptions failed', { err }),
      );
    };
  };
}
