import { randomBytes } from 'node:crypto';
import {
  type AuthInfo,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { type Logger, noopLogger } from '@zmcp/core';
import type { StateKey, StateStore } from '@zmcp/delivery';
import { type ToolHost, toMcpResult } from '@zmcp/tools';
import { z } from 'zod';
import { toolCallError } from './mcp-tools.js';

/** Options of {@link createMcpTasks}. */
export interface McpTasksOptions {
  /** Where task records live: every process sharing the store can answer a poll. */
  store: StateStore;
  /** The state account (realm and bot). */
  account: string;
  /** The tools that run as tasks when the caller's client supports them (the long waits). */
  tools: readonly string[];
  /** Tags the caller's credentials (`McpHandles.principal`): a task is shown only to the credentials that made it. */
  principal(caller: AuthInfo | undefined): string;
  /** How long a task's record is kept after it was created, in milliseconds. Default two hours. */
  ttlMs?: number | undefined;
  /** How often a client should poll, in milliseconds. Default 1000. */
  pollIntervalMs?: number | undefined;
  /**
   * How often the process running a task marks it alive and looks for a cancellation made on
   * another process, in milliseconds; a working task not marked for three of these is reported
   * failed (its process stopped). Default 5000.
   */
  heartbeatMs?: number | undefined;
  logger?: Logger | undefined;
}

/** Long calls as tasks (the `io.modelcontextprotocol/tasks` extension), for {@link createToolServer}'s `tasks`. */
export interface McpTasks {
  /** The tools that become tasks. */
  readonly tools: ReadonlySet<string>;
  /** Starts one call as a task; resolves with the task as created (`resultType: 'task'`). */
  start(
    host: ToolHost,
    params: { name: string; arguments?: Record<string, unknown> | undefined },
    ctx: ServerContext,
  ): Promise<Record<string, unknown>>;
  /** Serves `tasks/get`, `tasks/cancel` and `tasks/update` on one instance. */
  serve(server: Server): void;
  /** Cancels the tasks this process runs (at shutdown) and waits until their records say so. */
  close(): Promise<void>;
}

const TaskStatusSchema = z.enum(['working', 'completed', 'failed', 'cancelled']);

const TaskRecordSchema = z.object({
  taskId: z.string(),
  principal: z.string(),
  tool: z.string(),
  status: TaskStatusSchema,
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: z.number().int(),
  pollIntervalMs: z.number().int(),
  /** When the running process last marked it alive (ms since the epoch). */
  heartbeatAt: z.number(),
  statusMessage: z.string().optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string() }).optional(),
});
type TaskRecord = z.infer<typeof TaskRecordSchema>;

const TaskIdParams = z.looseObject({ taskId: z.string().min(1).max(200) });

/** The task as the wire shows it: no owner, no heartbeat. */
function wire(record: TaskRecord): Record<string, unknown> {
  return {
    taskId: record.taskId,
    status: record.status,
    createdAt: record.createdAt,
    lastUpdatedAt: record.lastUpdatedAt,
    ttlMs: record.ttlMs,
    pollIntervalMs: record.pollIntervalMs,
    ...(record.statusMessage === undefined ? {} : { statusMessage: record.statusMessage }),
    ...(record.status === 'completed' && record.result !== undefined ? { result: record.result } : {}),
    ...(record.status === 'failed' && record.error !== undefined ? { error: record.error } : {}),
  };
}

const unknownTask = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Unknown task');

/**
 * Long calls as tasks, hand-built on the SDK (it has no server-side tasks runtime): a call of one
 * of `tools` by a client that declared the extension answers at once with a task; the call runs on
 * in this process, and its record in the state store says how it ended, so `tasks/get` is
 * answered by any process sharing the store. `tasks/cancel` stops it (on another process, at the
 * next heartbeat). A task is shown only to the credentials that made it; its record goes once its
 * `ttlMs` has passed. The tasks take no input (`tasks/update` is refused).
 */
export function createMcpTasks(options: McpTasksOptions): McpTasks {
  const { store, account } = options;
  const logger = options.logger ?? noopLogger;
  const ttlMs = options.ttlMs ?? 2 * 60 * 60_000;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 5000;
  const running = new Map<string, { stop: AbortController; done: Promise<void> }>();
  const keyOf = (taskId: string): StateKey => ({ account, session: taskId, kind: 'task' });
  const now = () => new Date().toISOString();
  const callerOf = (ctx: ServerContext) => options.principal(ctx.http?.authInfo);

  /** Moves a working task to its end state; a task already ended (cancelled, say) keeps its own. */
  const settle = (taskId: string, end: Partial<TaskRecord> & { status: TaskRecord['status'] }) =>
    store.update(keyOf(taskId), TaskRecordSchema, (prev) => {
      // Throwing writes nothing: a task whose record went (expired) stays gone.
      if (prev === undefined) throw unknownTask();
      if (prev.status !== 'working') return prev;
      return { ...prev, ...end, lastUpdatedAt: now() };
    });

  /** The caller's task, or `-32602 Unknown task`; an expired one is deleted. */
  const find = async (taskId: string, ctx: ServerContext): Promise<TaskRecord> => {
    let record: TaskRecord | undefined;
    try {
      record = await store.read(keyOf(taskId), TaskRecordSchema);
    } catch (err) {
      // An id that is no valid state key names no task.
      if ((err as { code?: unknown }).code === 'DELIVERY_INVALID_SESSION_ID') throw unknownTask();
      throw err;
    }
    if (record === undefined || record.principal !== callerOf(ctx)) throw unknownTask();
    if (Date.parse(record.createdAt) + record.ttlMs < Date.now()) {
      await store.delete(keyOf(taskId));
      throw unknownTask();
    }
    if (
      record.status === 'working' &&
      !running.has(taskId) &&
      Date.now() - record.heartbeatAt > 3 * heartbeatMs
    ) {
      return settle(taskId, {
        status: 'failed',
        error: { code: ProtocolErrorCode.InternalError, message: 'The process running the task stopped.' },
      });
    }
    return record;
  };

  return {
    tools: new Set(options.tools),

    async start(host, params, ctx) {
      const taskId = randomBytes(18).toString('base64url');
      const created = now();
      const record: TaskRecord = {
        taskId,
        principal: callerOf(ctx),
        tool: params.name,
        status: 'working',
        createdAt: created,
        lastUpdatedAt: created,
        ttlMs,
        pollIntervalMs,
        heartbeatAt: Date.now(),
      };
      await store.write(keyOf(taskId), record);
      const stop = new AbortController();
      const heartbeat = setInterval(() => {
        void store
          .update(keyOf(taskId), TaskRecordSchema, (prev) => {
            if (prev === undefined || prev.status !== 'working') {
              // Cancelled on another process (or gone): stop the work.
              stop.abort(new DOMException('The task was cancelled.', 'AbortError'));
              if (prev === undefined) throw unknownTask();
              return prev;
            }
            return { ...prev, heartbeatAt: Date.now() };
          })
          .catch((err: unknown) => logger.warn('a task heartbeat failed', { task: params.name, err }));
      }, heartbeatMs);
      heartbeat.unref();
      const done = (async () => {
        try {
          const outcome = await host.call(params.name, params.arguments ?? {}, { signal: stop.signal });
          await settle(taskId, {
            status: 'completed',
            result: { resultType: 'complete', ...toMcpResult(outcome) },
          });
        } catch (err) {
          const mapped = toolCallError(err) as { code?: unknown; message?: unknown };
          await settle(taskId, {
            status: 'failed',
            error: {
              code: typeof mapped.code === 'number' ? mapped.code : ProtocolErrorCode.InternalError,
              message: typeof mapped.message === 'string' ? mapped.message : 'Internal error',
            },
          });
        }
      })()
        .catch((err: unknown) =>
          logger.warn('a task result could not be recorded', { task: params.name, err }),
        )
        .finally(() => {
          clearInterval(heartbeat);
          running.delete(taskId);
        });
      running.set(taskId, { stop, done });
      logger.debug('task started', { tool: params.name });
      return { resultType: 'task', ...wire(record) };
    },

    serve(server) {
      server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, ctx) =>
        wire(await find(params.taskId, ctx)),
      );
      server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (params, ctx) => {
        const record = await find(params.taskId, ctx);
        if (record.status === 'working') {
          await settle(params.taskId, { status: 'cancelled', statusMessage: 'Cancelled by the client.' });
          running.get(params.taskId)?.stop.abort(new DOMException('The task was cancelled.', 'AbortError'));
        } else if (record.status !== 'cancelled') {
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            `The task has already ${record.status === 'completed' ? 'completed' : 'failed'}.`,
          );
        }
        return {};
      });
      server.setRequestHandler(
        'tasks/update',
        { params: TaskIdParams },
        async (params, ctx): Promise<Record<string, never>> => {
          await find(params.taskId, ctx);
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'This task takes no input.');
        },
      );
    },

    async close() {
      const tasks = [...running.entries()];
      for (const [taskId, task] of tasks) {
        await settle(taskId, { status: 'cancelled', statusMessage: 'The server shut down.' }).catch(
          () => undefined,
        );
        task.stop.abort(new DOMException('The server shut down.', 'AbortError'));
      }
      await Promise.all(tasks.map(([, task]) => task.done));
    },
  };
}
