import { randomBytes } from 'node:crypto';
import { type AuthInfo, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Logger } from '@zmcp/core';
import type { StateKey, StateStore } from '@zmcp/delivery';
import { isServerKitError, type McpHandles } from '@zmcp/server-kit';
import {
  type AgentSessionSnapshot,
  AgentSessionSnapshotSchema,
  type AnyToolDefinition,
  type BoundTool,
  bindTools,
  defineTool,
  type ResourceChanges,
  type ResourceTemplateDefinition,
  sameConversation,
  type ToolDefinition,
  toolFailure,
} from '@zmcp/tools';
import { z } from 'zod';
import type { AgentSessionServices, Services } from './services.js';

// Agent sessions of 2026-era HTTP callers. There is no MCP session there: every request is served
// by a fresh instance, on whichever process receives it. A session lives in the state store instead
// (its conversation, read position and monitor cursors, keyed by a random id), and the caller
// carries a handle naming it: signed, bound to the caller's credentials, expiring, minted by
// set_context or start_monitoring and passed back as `session` to the tools that use it. Each
// process keeps the sessions it served lately in memory (their listening indicator, typing and
// event queues live there) and takes up what another process stored when it moved one on.

/** What a handle carries: the session's id in the state store. */
export interface SessionHandlePayload {
  s: string;
}

/** The tools that keep per-session state, and whether a call may start a new session. */
const SESSION_TOOLS: Readonly<Record<string, 'mint' | 'use'>> = {
  set_context: 'mint',
  reply: 'use',
  listen: 'use',
  end_session: 'use',
  start_monitoring: 'mint',
  stop_monitoring: 'use',
  get_monitored_channels: 'use',
  get_unread_messages: 'use',
};

/** Whether a tool keeps per-session state (and so takes a `session` handle over stateless HTTP). */
export function isSessionTool(name: string): boolean {
  return SESSION_TOOLS[name] !== undefined;
}

const StoredSessionSchema = z.object({
  rev: z.number().int().nonnegative(),
  created: z.string(),
  snapshot: AgentSessionSnapshotSchema,
});
type StoredSession = z.infer<typeof StoredSessionSchema>;

/** One session served by this process lately. */
interface LiveSession {
  readonly sid: string;
  readonly handle: string;
  readonly agent: AgentSessionServices;
  readonly tools: ReadonlyMap<string, BoundTool>;
  /** The stored revision this copy was last in step with (`-1`: never stored yet). */
  rev: number;
  /** Calls and listen streams using it now: it is never evicted while busy. */
  busy: number;
  lastUsed: number;
  cancelIdle: () => void;
}

/** Options of {@link HandleSessions}. */
export interface HandleSessionsOptions {
  services: Pick<Services, 'openSession'>;
  store: StateStore;
  account: string;
  handles: McpHandles<SessionHandlePayload>;
  logger: Logger;
  /** Most sessions kept live in this process; past it the least recently used idle one is let go. */
  maxLive: number;
  /** A live session unused for this long is let go (its state stays in the store), in milliseconds. */
  idleMs: number;
}

/** A session a call could not use: the failure the model reads. */
class NoSession extends Error {}

/** The sessions a process serves to 2026-era HTTP callers. */
export class HandleSessions {
  readonly #o: HandleSessionsOptions;
  readonly #live = new Map<string, LiveSession>();
  #uses = 0;
  #closed = false;

  constructor(options: HandleSessionsOptions) {
    this.#o = options;
  }

  #key(sid: string): StateKey {
    return { account: this.#o.account, session: sid, kind: 'agent' };
  }

  /** Lets a live session go (its state stays in the store): stops its listen, indicator, typing and queues. */
  #release(live: LiveSession): void {
    live.cancelIdle();
    if (this.#live.get(live.sid) === live) this.#live.delete(live.sid);
    void live.agent
      .close()
      .catch((err: unknown) => this.#o.logger.debug('closing a session failed', { err }));
  }

  #touch(live: LiveSession): void {
    live.lastUsed = ++this.#uses;
    live.cancelIdle();
    live.cancelIdle = () => {};
    if (live.busy > 0) return;
    const timer = setTimeout(() => {
      if (live.busy === 0) this.#release(live);
    }, this.#o.idleMs);
    timer.unref();
    live.cancelIdle = () => clearTimeout(timer);
  }

  #materialize(sid: string, handle: string): LiveSession {
    // Room for one more: the least recently used idle session goes first.
    while (this.#live.size >= this.#o.maxLive) {
      const idle = [...this.#live.values()].filter((l) => l.busy === 0);
      if (idle.length === 0) break;
      this.#release(idle.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b)));
    }
    const agent = this.#o.services.openSession({ launched: false, cursors: 'durable', stateSession: sid });
    const live: LiveSession = {
      sid,
      handle,
      agent,
      tools: new Map(agent.tools.map((t) => [t.definition.name, t])),
      rev: -1,
      busy: 0,
      lastUsed: 0,
      cancelIdle: () => {},
    };
    this.#live.set(sid, live);
    return live;
  }

  /**
   * The session a handle names, live here and in step with the store; with no handle and `mint`,
   * a new session (stored once its first call succeeds). Mark it busy until `done`.
   * @throws NoSession for a handle that is not valid for `caller`, or names a session that ended.
   */
  async open(handle: string | undefined, caller: AuthInfo | undefined, mint: boolean): Promise<LiveSession> {
    if (this.#closed) throw new NoSession('The server is shutting down.');
    if (handle === undefined) {
      if (!mint) throw new NoSession('session is required: pass the handle set_context returned.');
      const sid = randomBytes(16).toString('base64url');
      return this.#materialize(sid, await this.#o.handles.mint({ s: sid }, caller));
    }
    let sid: string;
    try {
      sid = (await this.#o.handles.verify(handle, caller)).s;
    } catch (err) {
      if (!isServerKitError(err, 'SERVER_KIT_BAD_HANDLE')) throw err;
      const reason = (err.details as { reason?: string } | undefined)?.reason;
      throw new NoSession(
        reason === 'expired'
          ? 'This session handle has expired.'
          : 'session is not a handle this server made for you.',
      );
    }
    if (typeof sid !== 'string') throw new NoSession('session is not a handle this server made for you.');
    const stored = await this.#o.store.read(this.#key(sid), StoredSessionSchema);
    if (stored === undefined) throw new NoSession('This session has ended.');
    const live = this.#live.get(sid) ?? this.#materialize(sid, handle);
    if (live.rev !== stored.rev) {
      live.agent.session.restore(stored.snapshot);
      live.rev = stored.rev;
    }
    return live;
  }

  /** Marks a session in use until the returned function is called. */
  hold(live: LiveSession): () => void {
    live.busy++;
    this.#touch(live);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      live.busy--;
      this.#touch(live);
    };
  }

  /**
   * Stores what a call left: this copy's state, where it and the stored one are bound to the same
   * conversation never moving the read position back (another process may have moved it on).
   */
  async save(live: LiveSession): Promise<void> {
    const here = live.agent.session.snapshot();
    const next = await this.#o.store.update(
      this.#key(live.sid),
      StoredSessionSchema,
      (prev): StoredSession => {
        if (prev === undefined) return { rev: 0, created: new Date().toISOString(), snapshot: here };
        return { rev: prev.rev + 1, created: prev.created, snapshot: merge(prev.snapshot, here) };
      },
    );
    live.agent.session.restore(next.snapshot);
    live.rev = next.rev;
  }

  /** Lets go of a session that was never stored (its first call failed): nothing of it stays. */
  discard(live: LiveSession): void {
    if (live.rev < 0) this.#release(live);
  }

  /** Ends a session for good: its stored state (monitor cursors too) goes, and a later call with its handle is refused. */
  async end(live: LiveSession): Promise<void> {
    await this.#o.store.delete(this.#key(live.sid));
    await this.#o.store.delete({ account: this.#o.account, session: live.sid, kind: 'monitor' });
    this.#release(live);
  }

  /**
   * The session a resource URI's `session` names, for a resource read or a listen stream.
   * @throws ProtocolError `-32602` when it names none the caller may use.
   */
  async forResource(
    handle: string | undefined,
    caller: AuthInfo | undefined,
    uri: string,
  ): Promise<LiveSession> {
    try {
      if (handle === undefined) throw new NoSession('session is required: add ?session=<handle> to the URI.');
      return await this.open(handle, caller, false);
    } catch (err) {
      if (err instanceof NoSession)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${uri}: ${err.message}`, { uri });
      throw err;
    }
  }

  /** Lets every live session go; the stored state stays. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#live.values()];
    this.#live.clear();
    for (const live of all) live.cancelIdle();
    await Promise.allSettled(all.map((live) => live.agent.close()));
  }

  /** How many sessions are live in this process. */
  get liveCount(): number {
    return this.#live.size;
  }
}

/** The stored state and this copy's, as one (see {@link HandleSessions.save}). */
function merge(stored: AgentSessionSnapshot, here: AgentSessionSnapshot): AgentSessionSnapshot {
  if (!sameConversation(stored.binding, here.binding)) return here;
  const handedOver = [...new Set([...stored.handedOver, ...here.handedOver])].slice(-500);
  return {
    ...here,
    lastSeenId: Math.max(stored.lastSeenId, here.lastSeenId),
    newestVisibleId:
      stored.newestVisibleId === null || here.newestVisibleId === null
        ? (here.newestVisibleId ?? stored.newestVisibleId)
        : Math.max(stored.newestVisibleId, here.newestVisibleId),
    handedOver,
  };
}

/** What a session tool's handle-taking form is bound to: the sessions, and the caller. */
export interface HandleCaller {
  sessions: HandleSessions;
  caller: AuthInfo | undefined;
}

const HandleSchema = z.string().min(1).max(2048);

// Made once per definition: every request lists the same schemas (converted once).
const wrapped = new WeakMap<AnyToolDefinition, ToolDefinition<z.ZodObject, z.ZodObject, HandleCaller>>();

/**
 * A session tool's form for stateless HTTP: its input takes `session` (the handle; optional where a
 * call may start a session), its result carries it, and the call runs on the session the handle
 * names. A handle that is not valid for the caller, or names a session that ended, is a tool
 * failure (`TOOLS_NO_SESSION`) saying what to do.
 */
function withHandle(definition: AnyToolDefinition): ToolDefinition<z.ZodObject, z.ZodObject, HandleCaller> {
  const known = wrapped.get(definition);
  if (known !== undefined) return known;
  const mode = SESSION_TOOLS[definition.name] ?? 'use';
  const described = HandleSchema.describe(
    mode === 'mint'
      ? 'The session handle a previous call returned; omit it to start a new session'
      : 'The session handle set_context (or start_monitoring) returned',
  );
  const inputSchema = (definition.inputSchema as z.ZodObject).extend({
    session: mode === 'mint' ? described.optional() : described,
  });
  const outputSchema = (definition.outputSchema as z.ZodObject).extend({
    session: z.string().describe('The session handle: pass it as session to the session tools'),
  });
  const tool = defineTool({
    name: definition.name,
    title: definition.title,
    description: definition.description,
    inputSchema,
    outputSchema,
    annotations: definition.annotations,
    toolset: definition.toolset,
    write: definition.write,
    ...(definition.deadlineMs === undefined
      ? {}
      : { deadlineMs: (input: Record<string, unknown>) => definition.deadlineMs?.(input) as number }),
    async handler(bound: HandleCaller, input: Record<string, unknown>, context) {
      const { session: handle, ...rest } = input as { session?: string };
      let live: LiveSession;
      try {
        live = await bound.sessions.open(handle, bound.caller, mode === 'mint');
      } catch (err) {
        if (!(err instanceof NoSession)) throw err;
        return toolFailure(
          'TOOLS_NO_SESSION',
          err.message,
          mode === 'mint'
            ? `Call ${definition.name} without session to start a new session.`
            : 'Call set_context (or start_monitoring) without session to start a new session, and pass the handle it returns.',
        );
      }
      const release = bound.sessions.hold(live);
      try {
        const tool = live.tools.get(definition.name);
        if (tool === undefined)
          return toolFailure('TOOLS_INVALID_INPUT', `${definition.name} is not served here.`);
        const result = await tool.run(rest, context);
        if (result.isError === true) {
          // A session that never got going is not kept; one that did keeps what the call changed.
          if (live.rev >= 0) await bound.sessions.save(live);
          else bound.sessions.discard(live);
          return result;
        }
        if (definition.name === 'end_session') await bound.sessions.end(live);
        else await bound.sessions.save(live);
        const minted = handle === undefined;
        return {
          ...result,
          text: minted
            ? `${result.text}\nSession handle (pass it as session to ${definition.name === 'set_context' ? 'reply, listen and end_session' : 'the other monitor tools'}): ${live.handle}`
            : result.text,
          data: { ...result.data, session: live.handle },
        };
      } finally {
        release();
      }
    },
  });
  wrapped.set(definition, tool as ToolDefinition<z.ZodObject, z.ZodObject, HandleCaller>);
  return tool as ToolDefinition<z.ZodObject, z.ZodObject, HandleCaller>;
}

/**
 * The handle-taking forms of the session tools a listing session serves (same names, same order),
 * bound to one caller.
 */
export function handleTools(
  definitions: readonly AnyToolDefinition[],
  sessions: HandleSessions,
  caller: AuthInfo | undefined,
): BoundTool[] {
  return bindTools(definitions.map(withHandle), { sessions, caller });
}

/** Where the monitor's resources live over stateless HTTP: the same URIs, with `?session=<handle>`. */
const SESSION_RESOURCES: readonly {
  uri: string;
  template: string;
  base: (v: Record<string, string>) => string;
}[] = [
  {
    uri: 'zulip://unread/summary',
    template: 'zulip://unread/summary{?session}',
    base: () => 'zulip://unread/summary',
  },
  {
    uri: 'zulip://monitoring/status',
    template: 'zulip://monitoring/status{?session}',
    base: () => 'zulip://monitoring/status',
  },
  {
    uri: 'zulip://channel/{stream}/unread',
    template: 'zulip://channel/{stream}/unread{?session}',
    base: (v) => `zulip://channel/${encodeURIComponent(v.stream ?? '')}/unread`,
  },
];

/** The resource URI without its `?session=…`, or `undefined` when it carries none. */
export function sessionResourceOf(uri: string): { base: string; handle: string } | undefined {
  const at = uri.indexOf('?');
  if (at < 0) return undefined;
  const handle = new URLSearchParams(uri.slice(at + 1)).get('session');
  return handle === null ? undefined : { base: uri.slice(0, at), handle };
}

/**
 * The monitor's resources over stateless HTTP, as templates taking `?session=<handle>`: a read goes
 * to the monitor of the session the handle names (refused with `-32602` for one the caller may not
 * use). They list nothing (a list is the same for every caller).
 */
export function sessionResourceTemplates(
  listing: AgentSessionServices,
  sessions: HandleSessions,
  caller: AuthInfo | undefined,
): ResourceTemplateDefinition[] {
  const fixed = new Map(listing.resources.map((r) => [r.uri, r]));
  const channel = listing.resourceTemplates[0];
  return SESSION_RESOURCES.map((entry) => {
    const model = fixed.get(entry.uri) ?? channel;
    return {
      uriTemplate: entry.template,
      name: model?.name ?? entry.uri,
      title: model?.title ?? entry.uri,
      description:
        `${model?.description ?? ''} Over stateless HTTP: add ?session=<handle> (from start_monitoring).`.trim(),
      mimeType: model?.mimeType ?? 'text/plain',
      list: async () => [],
      async read(uri, variables, context) {
        const live = await sessions.forResource(variables.session, caller, uri);
        const release = sessions.hold(live);
        try {
          const base = entry.base(variables);
          const resource = live.agent.resources.find((r) => r.uri === entry.uri);
          if (resource !== undefined) return await resource.read(context);
          const template = live.agent.resourceTemplates[0];
          if (template === undefined)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource ${uri} not found`);
          return await template.read(base, { stream: variables.stream ?? '' }, context);
        } finally {
          release();
        }
      },
    };
  });
}

/**
 * Follows the resources a 2026-era listen stream asked for (`…?session=<handle>`) until it ends:
 * each change of the session's monitor is published as an update of the URI as the client wrote
 * it. URIs without a session, or with one the caller may not use, are left alone.
 */
export async function followSessionResources(
  uris: readonly string[],
  sessions: HandleSessions,
  caller: AuthInfo | undefined,
  publish: (uri: string) => void,
  ended: Promise<void>,
  logger: Logger,
): Promise<void> {
  const bySession = new Map<string, { live: LiveSession; uris: Map<string, string[]> }>();
  for (const uri of uris) {
    const parsed = sessionResourceOf(uri);
    if (parsed === undefined) continue;
    let live: LiveSession;
    try {
      live = await sessions.open(parsed.handle, caller, false);
    } catch (err) {
      logger.debug('a listen stream named a session it may not use', {
        err: err instanceof Error ? err.message : err,
      });
      continue;
    }
    const entry = bySession.get(live.sid) ?? { live, uris: new Map<string, string[]>() };
    const list = entry.uris.get(parsed.base) ?? [];
    list.push(uri);
    entry.uris.set(parsed.base, list);
    bySession.set(live.sid, entry);
  }
  for (const { live, uris: byBase } of bySession.values()) {
    const release = sessions.hold(live);
    const changes: ResourceChanges = live.agent.resourceChanges;
    const stop = changes.subscribe((changed) => {
      for (const uri of byBase.get(changed) ?? []) publish(uri);
    });
    void ended.then(async () => {
      await stop();
      release();
    });
  }
}
