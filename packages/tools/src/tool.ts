import type { z } from 'zod';

/**
 * MCP tool annotations, as hints for clients. They describe the tool's effect on the
 * realm, not a permission: read-only mode and the access policy are enforced elsewhere.
 */
export interface ToolAnnotations {
  /** The tool never changes the realm. */
  readOnlyHint: boolean;
  /** The tool may destroy or overwrite something (delete, edit, unsubscribe). */
  destructiveHint: boolean;
  /** Calling again with the same input has no further effect. */
  idempotentHint: boolean;
  /** The tool talks to a system outside the server (the Zulip realm). */
  openWorldHint: boolean;
}

/**
 * A group of tools that a host serves or leaves out together. The default surface is lean
 * (`read`, `write`, `session`): tool definitions are paid for in the agent's context on every turn.
 */
export type Toolset =
  /** History, search, one message, streams, topics, finding a person, opening an attachment. */
  | 'read'
  /** Posting, DMs, editing one's own messages, reactions. */
  | 'write'
  /** The teammate loop: set_context, reply, listen, end_session. */
  | 'session'
  /** Browsing beyond the basics: history by date, user lists and profiles, members, emoji, links. */
  | 'browse'
  /** Files out: uploading a file on its own. */
  | 'files'
  /** Housekeeping: delete, resolve, mark read, subscriptions, removing reactions. */
  | 'manage'
  /** Unread monitoring with read cursors kept by the server. */
  | 'monitor'
  /** Attention controls of live delivery: muting channels, filters, reaction visibility. */
  | 'attention'
  /** Zulip reminders: remind_me, list_reminders, cancel_reminder. */
  | 'reminders';

/** Per-call context the call contract hands a tool handler. */
export interface ToolCallContext {
  /**
   * Fires when the call's one shared deadline passes (reason: a `DOMException` named
   * `TimeoutError`) or the host cancels it (reason: a `DOMException` named `AbortError`). Every
   * Zulip call of the tool passes it on; a handler that ignores it is answered for anyway once the
   * grace period is over.
   */
  signal: AbortSignal;
  /** Reports progress on a long call (keeps clients from timing out); a no-op when the host did not ask. */
  progress(update: { progress: number; total?: number; message?: string }): void;
}

/**
 * A successful tool result. `text` is what the model reads (message lines and short summaries,
 * escaped, inside the page budget); `data` holds the few typed fields a program needs (ids,
 * counts, cursors, flags) and matches the tool's output schema. Hosts show both as one rendering:
 * `structuredContent` is `{ text, ...data }`.
 */
export interface ToolSuccess<O> {
  isError?: false;
  text: string;
  data: O;
  /** Images to show the model after the text (a fetched attachment, say), base64-encoded. */
  images?: readonly ToolImage[];
}

/** An image a tool returns for the model to look at. */
export interface ToolImage {
  /** Base64 of the image bytes. */
  data: string;
  /** `image/png`, `image/jpeg`, `image/webp` or `image/gif`. */
  mimeType: string;
}

/** A failure the model should see and can act on; never thrown across the tool boundary. */
export interface ToolFailure {
  isError: true;
  /** What failed, then a hint the model can act on. */
  text: string;
  /** A stable code (`TOOLS_*`, or the code of the underlying error such as `CORE_ACCESS_DENIED`). */
  code: string;
}

/** What every tool handler returns. */
export type ToolResult<O> = ToolSuccess<O> | ToolFailure;

/**
 * One tool, defined once and statically: any host can list it without building services. The
 * handler takes the services it stands on (`S`), bound by {@link bindTool}.
 */
export interface ToolDefinition<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodObject = z.ZodObject,
  S = never,
> {
  /** Stable snake_case name. */
  name: string;
  /** Short human-readable title. */
  title: string;
  /** What the tool does and returns, as short as a model needs to choose and call it. */
  description: string;
  /** Input schema; fields carry a short `.describe()` where the name is not enough. */
  inputSchema: I;
  /** Schema of `data`, the typed fields beside `text`. */
  outputSchema: O;
  annotations: ToolAnnotations;
  /** Which toolset serves it. */
  toolset: Toolset;
  /** Writes to the realm: never served in read-only mode. */
  write: boolean;
  /**
   * The result is its text alone: no `structuredContent`, and no output schema in the listing
   * (`data` is still checked against `outputSchema`). For a client that reads only the first text
   * block of a result, such as Claude Code's `--permission-prompt-tool`, which refuses a result
   * whose text it is handed as `structuredContent` JSON.
   */
  textOnly?: boolean;
  /**
   * A call that needs a person's yes first: the question, from the validated input (one line, no
   * markup). A host whose client can ask its user (a 2026-era client with elicitation) asks it
   * before running the call and refuses it unless the answer is yes (`TOOLS_DECLINED`); a client
   * that cannot ask is served as before.
   */
  confirm?(input: z.infer<I>): string;
  /**
   * This call's deadline in milliseconds, for a tool that waits on purpose (`listen`): it replaces
   * the host's shared tool deadline. Absent: the shared deadline applies.
   */
  deadlineMs?(input: z.infer<I>): number;
  /**
   * Runs the tool on validated input. Expected failures come back as `ToolFailure` or are thrown
   * as coded errors; the call contract turns anything thrown into a failure.
   */
  handler(services: S, input: z.infer<I>, context: ToolCallContext): Promise<ToolResult<z.infer<O>>>;
}

/** A tool definition of any schemas and services, as catalogs hold them. */
// biome-ignore lint/suspicious/noExplicitAny: a catalog holds definitions of every input, output and service type.
export type AnyToolDefinition = ToolDefinition<any, any, any>;

/** A definition bound to the services its handler stands on: what a host serves. */
export interface BoundTool {
  readonly definition: AnyToolDefinition;
  /** Runs the handler on input already validated against the definition's input schema. */
  run(input: unknown, context: ToolCallContext): Promise<ToolResult<Record<string, unknown>>>;
}

/** Defines a tool with its input, output and services types inferred. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject, S>(
  tool: ToolDefinition<I, O, S>,
): ToolDefinition<I, O, S> {
  return tool;
}

/** Binds a definition to its services. */
export function bindTool<I extends z.ZodObject, O extends z.ZodObject, S>(
  definition: ToolDefinition<I, O, S>,
  services: S,
): BoundTool {
  return {
    definition,
    run: (input, context) =>
      definition.handler(services, input as z.infer<I>, context) as Promise<
        ToolResult<Record<string, unknown>>
      >,
  };
}

/** Binds every definition of a list to the same services. */
export function bindTools<S>(
  definitions: readonly ToolDefinition<z.ZodObject, z.ZodObject, S>[],
  services: S,
): BoundTool[] {
  return definitions.map((d) => bindTool(d, services));
}

/** What a resource read returns: the text a client shows the model. */
export interface ResourceContents {
  /** `text/plain` or `application/json`. */
  mimeType: string;
  text: string;
}

/** A fixed-URI resource (`zulip://unread/summary`), MCP-agnostic; apps register it. */
export interface ResourceDefinition {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  read(context: { signal: AbortSignal }): Promise<ResourceContents>;
}

/** A family of resources under one RFC 6570 template (`zulip://channel/{stream}/unread`). */
export interface ResourceTemplateDefinition {
  uriTemplate: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  /** The concrete resources to list (e.g. one per monitored stream). */
  list(context: { signal: AbortSignal }): Promise<{ uri: string; name: string }[]>;
  /** Reads one resource; `variables` are the template's values, already URI-decoded. */
  read(
    uri: string,
    variables: Readonly<Record<string, string>>,
    context: { signal: AbortSignal },
  ): Promise<ResourceContents>;
}

/** Tells an app which resource URIs changed, so it can notify subscribed clients. */
export interface ResourceChanges {
  /** Calls `listener` with each changed URI until the returned function is called. */
  subscribe(listener: (uri: string) => void): () => void;
}

/** A prompt template, MCP-agnostic; apps register it. */
export interface PromptDefinition<A extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  /** Arguments; every value is a string on the wire. */
  argsSchema: A;
  render(args: z.infer<A>): {
    description?: string;
    messages: { role: 'user' | 'assistant'; text: string }[];
  };
}
