import {
  type CacheHint,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  inputRequired,
  inputResponse,
  type LoggingLevel,
  ProtocolError,
  ProtocolErrorCode,
  type ReadResourceResult,
  Server,
  type ServerCapabilities,
  type ServerContext,
  UriTemplate,
} from '@modelcontextprotocol/server';
import { type Logger, noopLogger } from '@zmcp/core';
import {
  describeInvalidInput,
  type PromptDefinition,
  type ResourceChanges,
  type ResourceContents,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  type ToolHost,
  toMcpResult,
  toolFailure,
} from '@zmcp/tools';
import { z } from 'zod';
import type { McpTasks } from './mcp-tasks.js';
import { callMcpTool, listMcpTools } from './mcp-tools.js';

/** The protocol era an instance serves: `legacy` (2025-11-25 and earlier, `initialize`) or `modern` (2026-07-28). */
export type McpEra = 'legacy' | 'modern';

/** The key under which the tasks extension is declared and looked for in the client's capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Options of {@link createToolServer}. */
export interface ToolServerOptions {
  /** `serverInfo.name`. */
  name: string;
  /** `serverInfo.version`. */
  version: string;
  /** The era this instance serves, as the serving entry's factory was told (`ctx.era`). Default `legacy`. */
  era?: McpEra | undefined;
  /** Instructions for the model, in `initialize` and `server/discover`; clients may cut them at 2 KB. */
  instructions?: string | undefined;
  /** The tools, served through this host: its listing, its calls. */
  host: ToolHost;
  /**
   * Hand each request's id to the host for de-duplication of retried writes (default true). Turn it
   * off where an instance serves one request (2026-era HTTP): the id then names nothing beyond it.
   */
  dedupByRequestId?: boolean | undefined;
  /** Where resource-read failures and subscription events are logged. Default: nowhere. */
  logger?: Logger | undefined;
  /** The deadline of one resource read, in milliseconds (the tool deadline). */
  deadlineMs: number;
  /** Fixed-URI resources. */
  resources?: readonly ResourceDefinition[] | undefined;
  /** Resource templates; each lists its resources and reads them with their variables URI-decoded. */
  resourceTemplates?: readonly ResourceTemplateDefinition[] | undefined;
  /** Prompt templates. */
  prompts?: readonly PromptDefinition[] | undefined;
  /**
   * Which resource URIs changed. With it, clients may follow resources: in the 2025 era through
   * `resources/subscribe` (each instance is notified only of the URIs it subscribed to, and listens
   * to `resourceChanges` only while it holds a subscription); in the 2026 era through
   * `subscriptions/listen`, which the serving entry answers (see {@link liveResourceUpdates}).
   */
  resourceChanges?: ResourceChanges | undefined;
  /**
   * In the 2026 era: listen to `resourceChanges` for the whole life of the instance and send every
   * change as `notifications/resources/updated`, which `serveStdio` routes onto the client's
   * `subscriptions/listen` streams (the entry answers that request itself, so an instance cannot
   * see when one opens). Leave it off for per-request HTTP instances, whose updates go through the
   * HTTP handler's event bus. Default false.
   */
  liveResourceUpdates?: boolean | undefined;
  /** Members of `capabilities.experimental` (Claude Code channels declare `claude/channel`). */
  experimental?: Record<string, Record<string, never>> | undefined;
  /** Long waits as tasks (the `io.modelcontextprotocol/tasks` extension), 2026 era only. */
  tasks?: McpTasks | undefined;
  /**
   * Called with every request handler's work (tool calls, resource reads, prompts): a transport that
   * must answer what is in flight before it closes (stdio at end of input) counts them here.
   */
  track?: (<T>(work: Promise<T>) => Promise<T>) | undefined;
  /**
   * Called once per `tools/call` after it is answered: the tool, era, client, outcome and how long
   * it took. For an operator's figures (calls per tool, errors by code, latency), observed here once
   * for every bin and transport. Never given the arguments or the result.
   */
  observe?: ((call: ToolCallObservation) => void) | undefined;
  /** Cache hints of the 2026-era list and read results; see {@link DEFAULT_CACHE_HINTS}. */
  cacheHints?: Partial<Record<CacheableMethod, CacheHint>> | undefined;
}

/** One answered `tools/call`, as {@link ToolServerOptions.observe} is told of it. */
export interface ToolCallObservation {
  readonly tool: string;
  readonly era: McpEra;
  /** The client's `name` as it introduced itself (`initialize`, or the 2026 request envelope); `unknown` without one. */
  readonly client: string;
  /** `ok`, `error` (an `isError` result), `protocol-error` (an unknown tool, say), or `task` (started as a task). */
  readonly outcome: 'ok' | 'error' | 'protocol-error' | 'task';
  /** The error's stable code, for `error` and `protocol-error`. */
  readonly code?: string | undefined;
  readonly durationMs: number;
}

/** The calling client's name: the 2026 request envelope's, or what `initialize` said. */
function clientName(server: Server, ctx: ServerContext): string {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const info = (envelope?.[CLIENT_INFO_META_KEY] ?? server.getClientVersion()) as
    | { name?: unknown }
    | undefined;
  const name = info?.name;
  return typeof name === 'string' && name !== '' ? name.slice(0, 100) : 'unknown';
}

/** The results the 2026-07-28 revision lets a server give cache hints for. */
export type CacheableMethod =
  | 'tools/list'
  | 'prompts/list'
  | 'resources/list'
  | 'resources/templates/list'
  | 'resources/read'
  | 'server/discover';

/**
 * The cache hints zmcp's servers give 2026-era clients (2025-era answers carry none). What a
 * process serves is fixed at start-up (toolsets, read-only mode, channels) and is the same for
 * every caller of it, so its lists and `server/discover` may be kept five minutes and shared
 * (`public`). A resource's contents (unread counts) and the resource list (one per monitored
 * stream) change with the caller's own state: never cached (`ttlMs: 0`, `private`).
 */
export const DEFAULT_CACHE_HINTS: Readonly<Record<CacheableMethod, CacheHint>> = Object.freeze({
  'tools/list': { ttlMs: 300_000, cacheScope: 'public' },
  'prompts/list': { ttlMs: 300_000, cacheScope: 'public' },
  'resources/templates/list': { ttlMs: 300_000, cacheScope: 'public' },
  'server/discover': { ttlMs: 300_000, cacheScope: 'public' },
  'resources/list': { ttlMs: 0, cacheScope: 'private' },
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
});

const instructionsSoftLimit = 2048;

/** One URI as the server compares them: parsed and re-serialized, so equivalent spellings match. */
function normalizeUri(uri: string): string | undefined {
  try {
    return new URL(uri).toString();
  } catch {
    return undefined;
  }
}

/**
 * A resource that does not exist. The SDK answers it `-32602` on every revision (the 2026-07-28
 * rule; `-32002` was the 2025 code, which clients still accept).
 */
function notFound(uri: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource ${uri} not found`, { uri });
}

/** Turns a failure to read a resource into the protocol error a client gets; messages are safe. */
function resourceError(err: unknown, uri: string): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const code = (err as { code?: unknown }).code;
  const message = (err as { message?: unknown }).message;
  if (typeof code === 'string' && typeof message === 'string' && /^(CORE|TOOLS|DELIVERY)_/.test(code)) {
    if (code === 'TOOLS_NOT_FOUND')
      return new ProtocolError(ProtocolErrorCode.InvalidParams, message, { uri });
    if (code === 'TOOLS_INVALID_INPUT')
      return new ProtocolError(ProtocolErrorCode.InvalidParams, message, { uri });
    return new ProtocolError(ProtocolErrorCode.InternalError, `${code}: ${message}`, { uri, code });
  }
  return new ProtocolError(ProtocolErrorCode.InternalError, `Resource ${uri} could not be read.`, { uri });
}

/** The template's variables, URI-decoded; a malformed escape is the client's error. */
function decodeVariables(variables: Record<string, string | string[]>, uri: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(variables)) {
    const raw = Array.isArray(value) ? value.join(',') : value;
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Resource URI ${uri} has a malformed escape in {${name}}.`,
      );
    }
  }
  return out;
}

/** The key of the confirmation in an `input_required` result and its retry's `inputResponses`. */
const CONFIRM_KEY = 'confirm';
/** What the confirmation asks the user: one yes/no field. */
const ConfirmSchema = z.object({ confirm: z.boolean().describe('Yes, do it') });

/** Whether the request's client can ask its user (2026 era: `elicitation` in the request's envelope). */
export function clientSupportsElicitation(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | undefined;
  return capabilities?.elicitation !== undefined && capabilities.elicitation !== null;
}

/** Whether the request's client declared the tasks extension (2026 era: in the request's envelope). */
export function clientSupportsTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    | { extensions?: Record<string, unknown> }
    | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * Builds one MCP server instance on the SDK's low-level `Server`, serving a `ToolHost` in either
 * era, for whichever entry runs it (`serveStdio`, `createMcpHandler`, a 2025 session, or a plain
 * `connect`). tools/list answers the host's one cached listing (schemas converted once, shared by
 * every instance, in catalog order); tools/call goes through the host with the request's signal,
 * progress token and id, the two protocol errors mapped (unknown tool `-32602`, reused write id
 * `-32600`) and everything else answered as a tool result (`toMcpResult`). Resources, templates
 * and prompts are served when given; resource changes reach 2025 clients through
 * `resources/subscribe` and 2026 clients through `subscriptions/listen`. In the 2026 era each tool
 * call's outcome is also sent as a log message at `info`, which the SDK passes on only when the
 * request asked for that level (`_meta` `logLevel`); and with `tasks`, a long wait becomes a task
 * when the request's client declared the tasks extension.
 *
 * Call `close()` on the returned server when done: it releases its resource subscriptions.
 */
export function createToolServer(options: ToolServerOptions): Server {
  const logger = options.logger ?? noopLogger;
  const era = options.era ?? 'legacy';
  const modern = era === 'modern';
  const host = options.host;
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
  const tasks = modern ? options.tasks : undefined;
  const track = options.track ?? (<T>(work: Promise<T>) => work);

  const capabilities: ServerCapabilities = {
    tools: { listChanged: false },
    ...(servesResources ? { resources: { subscribe: subscribable, listChanged: false } } : {}),
    ...(prompts.length > 0 ? { prompts: { listChanged: false } } : {}),
    ...(options.experimental === undefined ? {} : { experimental: options.experimental }),
    // 2025-era clients get no log messages (none asked for them before); a 2026 request opts in.
    ...(modern ? { logging: {} } : {}),
    ...(tasks === undefined ? {} : { extensions: { [TASKS_EXTENSION]: {} } }),
  };
  const server = new Server(
    { name: options.name, version: options.version },
    {
      capabilities,
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
      cacheHints: { ...DEFAULT_CACHE_HINTS, ...options.cacheHints },
    },
  );

  const tools = listMcpTools(host);
  server.setRequestHandler('tools/list', () => ({ tools: [...tools] }));
  const callOptions = { dedupByRequestId: options.dedupByRequestId };
  server.setRequestHandler('tools/call', (request, ctx) =>
    track(
      (async (): Promise<CallToolResult> => {
        const params = request.params;
        logger.debug('tool call started', { tool: params.name, args: params.arguments });
        if (tasks?.tools.has(params.name) === true && host.has(params.name) && clientSupportsTasks(ctx)) {
          const task = (await tasks.start(host, params, ctx)) as unknown as CallToolResult;
          options.observe?.({
            tool: params.name.slice(0, 100),
            era,
            client: clientName(server, ctx),
            outcome: 'task',
            durationMs: 0,
          });
          return task;
        }
        // A call that needs a person's yes: a 2026-era client that can ask its user is asked first.
        const question = modern ? host.confirmation(params.name, params.arguments ?? {}) : undefined;
        if (question !== undefined && clientSupportsElicitation(ctx)) {
          const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
          if (answer.kind === 'missing') {
            return inputRequired({
              inputRequests: {
                [CONFIRM_KEY]: inputRequired.elicit({ message: question, requestedSchema: ConfirmSchema }),
              },
            }) as unknown as CallToolResult;
          }
          if (!(answer.kind === 'elicit' && answer.action === 'accept' && answer.content?.confirm === true)) {
            return toMcpResult(
              toolFailure(
                'TOOLS_DECLINED',
                `Not done: the user did not confirm "${question}".`,
                'Ask in the conversation what to do instead.',
              ),
            );
          }
        }
        const started = performance.now();
        const outcome = await callMcpTool(host, params, ctx, {
          ...callOptions,
          observe: options.observe,
          caller: options.observe === undefined ? undefined : { era, client: clientName(server, ctx) },
        });
        if (modern) {
          await ctx.mcpReq
            .log(
              'info' satisfies LoggingLevel,
              {
                tool: params.name,
                outcome: outcome.isError ? 'error' : 'ok',
                ...(outcome.isError ? { code: outcome.code } : {}),
                ms: Math.round(performance.now() - started),
              },
              options.name,
            )
            .catch((err: unknown) => logger.debug('a log message to the client failed', { err }));
        }
        return toMcpResult(outcome);
      })(),
    ),
  );
  if (tasks !== undefined) tasks.serve(server);

  if (servesResources) serveResources(server, resources, templates, options.deadlineMs, track);
  if (prompts.length > 0) servePrompts(server, prompts);
  let release: (() => Promise<void>) | undefined;
  if (subscribable) {
    const changes = options.resourceChanges as ResourceChanges;
    if (!modern) release = serveSubscriptions(server, resources, templates, changes, logger).release;
    else if (options.liveResourceUpdates === true) release = followChanges(server, changes, logger);
  }
  server.onclose = () => {
    void release?.().catch((err: unknown) =>
      logger.debug('releasing resource subscriptions failed', { err }),
    );
  };
  return server;
}

/** resources/list, resources/templates/list and resources/read; each read runs under the tool deadline. */
function serveResources(
  server: Server,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  deadlineMs: number,
  track: <T>(work: Promise<T>) => Promise<T>,
): void {
  const signalFor = (ctx: ServerContext) =>
    AbortSignal.any([ctx.mcpReq.signal, AbortSignal.timeout(deadlineMs)]);
  const answer = (uri: string, contents: ResourceContents): ReadResourceResult => ({
    contents: [{ uri, mimeType: contents.mimeType, text: contents.text }],
  });
  const fixed = new Map(resources.map((r) => [normalizeUri(r.uri) ?? r.uri, r]));
  const patterns = templates.map((t) => ({ template: t, pattern: new UriTemplate(t.uriTemplate) }));

  server.setRequestHandler('resources/list', (_request, ctx) =>
    track(
      (async () => {
        const listed = resources.map((r) => ({
          uri: r.uri,
          name: r.name,
          title: r.title,
          description: r.description,
          mimeType: r.mimeType,
        }));
        for (const t of templates) {
          try {
            for (const r of await t.list({ signal: signalFor(ctx) })) {
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
      })(),
    ),
  );
  const listedTemplates = templates.map((t) => ({
    uriTemplate: t.uriTemplate,
    name: t.name,
    title: t.title,
    description: t.description,
    mimeType: t.mimeType,
  }));
  server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: listedTemplates }));
  server.setRequestHandler('resources/read', (request, ctx) =>
    track(
      (async () => {
        const uri = request.params.uri;
        const normalized = normalizeUri(uri);
        const resource = normalized === undefined ? undefined : fixed.get(normalized);
        try {
          if (resource !== undefined) return answer(uri, await resource.read({ signal: signalFor(ctx) }));
          for (const { template, pattern } of patterns) {
            const variables = pattern.match(uri);
            if (variables === null) continue;
            const decoded = decodeVariables(variables, uri);
            return answer(uri, await template.read(uri, decoded, { signal: signalFor(ctx) }));
          }
        } catch (err) {
          throw resourceError(err, uri);
        }
        throw notFound(uri);
      })(),
    ),
  );
}

/** prompts/list and prompts/get, with the arguments validated by the prompt's zod schema. */
function servePrompts(server: Server, prompts: readonly PromptDefinition[]): void {
  const byName = new Map(prompts.map((p) => [p.name, p]));
  const listed = prompts.map((p) => ({
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
  }));
  server.setRequestHandler('prompts/list', () => ({ prompts: listed }));
  server.setRequestHandler('prompts/get', (request) => {
    const prompt = byName.get(request.params.name);
    if (prompt === undefined)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Prompt ${request.params.name} not found`);
    const parsed = prompt.argsSchema.safeParse(request.params.arguments ?? {});
    if (!parsed.success)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, describeInvalidInput(parsed.error));
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
 * 2026 era: every change of `changes` is sent as `notifications/resources/updated` for as long as
 * the instance lives; the serving entry delivers it on the listen streams that asked for the URI.
 */
function followChanges(server: Server, changes: ResourceChanges, logger: Logger): () => Promise<void> {
  const stop = changes.subscribe((uri) => {
    if (server.transport === undefined) return;
    server
      .sendResourceUpdated({ uri })
      .catch((err: unknown) => logger.debug('resource update notification failed', { uri, err }));
  });
  return async () => {
    await stop();
  };
}

/**
 * 2025 era: resources/subscribe and resources/unsubscribe for one instance.
 * `notifications/resources/updated` goes out only for the URIs it subscribed to, and the instance
 * listens to `changes` only while it holds a subscription. `release` drops them all.
 */
function serveSubscriptions(
  server: Server,
  resources: readonly ResourceDefinition[],
  templates: readonly ResourceTemplateDefinition[],
  changes: ResourceChanges,
  logger: Logger,
): { release(): Promise<void> } {
  const fixed = new Set(resources.map((r) => normalizeUri(r.uri) ?? r.uri));
  const patterns = templates.map((t) => new UriTemplate(t.uriTemplate));
  const known = (uri: string) => fixed.has(uri) || patterns.some((p) => p.match(uri) !== null);
  const subscribed = new Set<string>();
  let stop: (() => void | Promise<void>) | undefined;

  const release = async () => {
    subscribed.clear();
    const stopping = stop;
    stop = undefined;
    await stopping?.();
  };

  server.setRequestHandler('resources/subscribe', async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri === undefined || !known(uri)) throw notFound(request.params.uri);
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

  server.setRequestHandler('resources/unsubscribe', async (request) => {
    const uri = normalizeUri(request.params.uri);
    if (uri !== undefined) subscribed.delete(uri);
    // The last subscription gone, the instance stops listening (the event queue may stop with it).
    if (subscribed.size === 0) await release();
    logger.debug('resource unsubscribed', { uri: request.params.uri });
    return {};
  });

  return { release };
}
