import type { Server } from '@modelcontextprotocol/server';
import { createToolServer, type McpEra, type McpTasks } from '@zmcp/server-kit';
import {
  type BoundTool,
  type PromptDefinition,
  type ResourceChanges,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  ToolHost,
} from '@zmcp/tools';
import { type Logger, silentLogger } from './logging.js';

/** Options of {@link createMcpServer}. */
export interface CreateMcpServerOptions {
  /** Server name reported in `initialize` and `server/discover`. */
  name: string;
  /** Server version reported there. */
  version: string;
  /** The era the instance serves, as the serving entry's factory was told (`ctx.era`). Default `legacy`. */
  era?: McpEra | undefined;
  /** Instructions for the model; clients may cut them at 2 KB. */
  instructions?: string | undefined;
  /** The tools to serve, already selected (toolsets, read-only mode) and bound to their services. */
  tools: readonly BoundTool[];
  logger?: Logger | undefined;
  /** One deadline shared by all the work of a tool call (and of a resource read), in milliseconds. */
  deadlineMs: number;
  /** See `ToolHostOptions.graceMs`. Default 1000. */
  deadlineGraceMs?: number | undefined;
  /** How many write-tool request ids the instance remembers for de-duplication. Default 1024. */
  dedupCapacity?: number | undefined;
  /** Fixed-URI resources to serve (`zulip://unread/summary`, ...). */
  resources?: readonly ResourceDefinition[] | undefined;
  /** Resource templates to serve (`zulip://channel/{stream}/unread`); each lists its resources. */
  resourceTemplates?: readonly ResourceTemplateDefinition[] | undefined;
  /** Prompt templates to serve. */
  prompts?: readonly PromptDefinition[] | undefined;
  /** Which resource URIs changed: clients may then follow the resources (see `@zmcp/server-kit`'s `createToolServer`). */
  resourceChanges?: ResourceChanges | undefined;
  /** Members of `capabilities.experimental`. */
  experimental?: Record<string, Record<string, never>> | undefined;
  /** Long waits as tasks, 2026 era only. */
  tasks?: McpTasks | undefined;
}

/**
 * One MCP server instance (the SDK's low-level `Server`) serving a `@zmcp/tools` catalog, for any
 * serving entry: connect it to a transport, return it from a `serveStdio` or `createMcpHandler`
 * factory, or from `startHttpServer`'s `createServer`. It builds its own `ToolHost` over `tools`
 * (so write request ids are de-duplicated per instance) and is `@zmcp/server-kit`'s
 * `createToolServer` beyond that: tools/list from one cached listing, tools/call through the host
 * (unknown tool `-32602`, reused write id `-32600`, everything else a tool result), resources,
 * prompts and resource updates in both eras.
 *
 * @throws ToolError `TOOLS_INVALID_CATALOG` when two tools share a name or a name is not valid.
 */
export function createMcpServer(options: CreateMcpServerOptions): Server {
  const logger = options.logger ?? silentLogger;
  const host = new ToolHost(options.tools, {
    deadlineMs: options.deadlineMs,
    graceMs: options.deadlineGraceMs,
    dedupCapacity: options.dedupCapacity,
    logger,
  });
  return createToolServer({
    name: options.name,
    version: options.version,
    era: options.era,
    instructions: options.instructions,
    host,
    logger,
    deadlineMs: options.deadlineMs,
    resources: options.resources,
    resourceTemplates: options.resourceTemplates,
    prompts: options.prompts,
    resourceChanges: options.resourceChanges,
    liveResourceUpdates: true,
    experimental: options.experimental,
    tasks: options.tasks,
  });
}
