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

/** Per-call context an app hands a tool handler. Identity and scopes are not here: they are bound when the catalog is built. */
export interface ToolCallContext {
  /** Fires when the call's one shared deadline passes or the client cancels; every Zulip call of the tool uses it. */
  signal: AbortSignal;
  /** Report progress on a long call (keeps MCP clients from timing out); a no-op when the client did not ask. */
  progress(update: { progress: number; total?: number; message?: string }): void;
}

/** A successful tool result: compact text for the model, typed JSON matching the output schema. */
export interface ToolSuccess<O> {
  isError?: false;
  /** What the model reads: message lines and short summaries, never a raw API dump. */
  text: string;
  /** The typed result, matching the tool's output schema. */
  structured: O;
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

/** One tool, defined once and registered by each app on its own transport. */
export interface ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  /** Stable snake_case name. */
  name: string;
  /** Short human-readable title. */
  title: string;
  /** What the tool does, when to use it and what it returns, written for a model. */
  description: string;
  /** Input schema; every field carries a `.describe()` a model can act on. */
  inputSchema: I;
  /** Output schema of `structured`. */
  outputSchema: O;
  annotations: ToolAnnotations;
  /** Writes to the realm: hidden from tools/list in read-only mode. */
  write: boolean;
  /**
   * This call's deadline in milliseconds, for a tool that waits on purpose (`listen`): it replaces
   * the server's shared tool deadline. Absent: the shared deadline applies.
   */
  deadlineMs?(input: z.infer<I>): number;
  /** Runs the tool on validated input. Expected failures come back as `ToolFailure`; anything thrown is turned into one by `runTool`. */
  handler(input: z.infer<I>, context: ToolCallContext): Promise<ToolResult<z.infer<O>>>;
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
