import { createLogger, ExitCode, reportInvalidConfiguration, startupConfigurationProblem } from '@zmcp/cli';
import { type CallOptions, errorCode, type Logger, readMessage } from '@zmcp/core';
import { openZulipRuntime, type ZulipRuntime } from '@zmcp/server-kit';
import { isToolError, postMessage } from '@zmcp/tools';
import { z } from 'zod';
import { type CommandIo, commandConfig, outputsOf, readText } from './command-io.js';
import { type Config, configVariableNames } from './config.js';

// `zulip-mcp hook`: a Claude Code hook (the plugin's hooks/hooks.json runs it for SessionStart,
// Notification, StopFailure and SessionEnd). It reads the event Claude Code writes on stdin and
// posts one line about the session's lifecycle into the bound topic (SESSION_STREAM and
// SESSION_TOPIC, or TRIGGER_MESSAGE_ID), through the one posting function every tool uses: the
// write policy, the Markdown fixes, send once. Nothing of the event's free text reaches the
// message but Claude Code's own notification line, folded and fenced in code. It prints nothing
// on stdout (Claude Code hands a SessionStart hook's stdout to the model) and never exits 2 (which
// would block Claude Code): 0 when done or when there is nothing to say, 1 when it could not post.

/** The most a hook event may take on stdin. */
const MAX_EVENT_BYTES = 1024 * 1024;
/** Plugin options arrive as `CLAUDE_PLUGIN_OPTION_<KEY>`; a key named like a setting sets it. */
const PLUGIN_OPTION = 'CLAUDE_PLUGIN_OPTION_';

/** Streams of one run of {@link hookMain}; each defaults to the process's own. */
export type HookIo = CommandIo;

const EventSchema = z.looseObject({
  hook_event_name: z.string(),
  session_id: z.string().max(200),
  source: z.string().optional(),
  notification_type: z.string().optional(),
  message: z.string().optional(),
  error: z.string().optional(),
  reason: z.string().optional(),
});
type HookEvent = z.infer<typeof EventSchema>;

/**
 * Text for an inline code span: one line, no backtick (so nothing can close the span, and inside
 * it Zulip renders no mention, link or markup), at most `max` characters.
 */
function codeSpanText(text: string, max: number): string {
  const folded = text
    .replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, ' ')
    .replace(/`/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return folded.length > max ? `${folded.slice(0, max - 1)}…` : folded;
}

/** What a lifecycle event says in the topic, or undefined for an event the plugin stays quiet about. */
export function lifecycleText(event: HookEvent): string | undefined {
  const id = event.session_id.replace(/[^A-Za-z0-9-]/g, '').slice(0, 8) || 'unknown';
  const session = `Claude Code session \`${id}\``;
  switch (event.hook_event_name) {
    case 'SessionStart':
      if (event.source === 'startup') return `${session} started.`;
      if (event.source === 'resume') return `${session} resumed.`;
      return undefined;
    case 'Notification': {
      if (event.notification_type !== 'permission_prompt') return undefined;
      const said = codeSpanText(event.message ?? '', 200);
      return `${session} is waiting for permission${said === '' ? '' : `: \`${said}\``}.`;
    }
    case 'StopFailure': {
      const why = codeSpanText(event.error ?? '', 60);
      return `${session} failed${why === '' ? '' : ` (\`${why}\`)`}.`;
    }
    case 'SessionEnd':
      return `${session} finished.`;
    default:
      return undefined;
  }
}

/** The settings, with plugin options (`CLAUDE_PLUGIN_OPTION_ZULIP_RC_PATH`...) standing in for unset variables. */
function hookEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const names = new Set(configVariableNames());
  const merged: Record<string, string | undefined> = { ...env };
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith(PLUGIN_OPTION)) continue;
    const name = key.slice(PLUGIN_OPTION.length);
    if (names.has(name) && (merged[name] ?? '') === '') merged[name] = value;
  }
  return merged;
}

/** The bound topic: SESSION_STREAM and SESSION_TOPIC, or the stream and topic of TRIGGER_MESSAGE_ID. */
async function boundTopic(
  runtime: ZulipRuntime,
  config: Config,
  call: CallOptions,
): Promise<{ streamId: number; topic: string } | undefined> {
  const launch = config.session.launch;
  if (launch === undefined) return undefined;
  if (launch.triggerMessageId !== undefined) {
    const streams = await runtime.services.directory.streamLookup(call);
    const m = await readMessage(runtime.client, runtime.policy, launch.triggerMessageId, { streams, call });
    if (m.type !== 'stream' || m.stream_id === undefined) return undefined;
    return { streamId: m.stream_id, topic: m.subject };
  }
  if (launch.stream === undefined || launch.topic === undefined) return undefined;
  const stream = await runtime.services.directory.stream(launch.stream, call);
  return { streamId: stream.stream_id, topic: launch.topic };
}

/**
 * Runs `zulip-mcp hook`: reads one Claude Code hook event on stdin and posts what it says about
 * the session (started, waiting for permission, failed, finished) into the bound topic, with the
 * server's own settings (a plugin option `CLAUDE_PLUGIN_OPTION_<VARIABLE>` stands in for an unset
 * variable). Resolves with the exit code: 0 when posted or when there is nothing to post, 1 when
 * it could not post or the configuration is bad (never 2, which Claude Code reads as "block").
 * Writes nothing on stdout.
 */
export async function hookMain(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: HookIo = {},
): Promise<number> {
  const { stderr } = outputsOf(io);
  const config = commandConfig('zulip-mcp hook', hookEnv(env), argv, stderr, ExitCode.failure);
  if (typeof config === 'number') return config;
  const logger: Logger = createLogger({
    level: config.logLevel,
    secrets: [config.zulip.apiKey ?? ''],
    write: (line) => void stderr.write(line),
  });
  let event: HookEvent;
  try {
    const raw = await readText(
      io.stdin ?? process.stdin,
      MAX_EVENT_BYTES,
      `the hook event on stdin is over ${MAX_EVENT_BYTES} bytes`,
    );
    event = EventSchema.parse(JSON.parse(raw));
  } catch (err) {
    logger.error('zulip-mcp hook reads the hook event Claude Code writes on stdin; this was none', {
      err: err instanceof Error ? err.message : String(err),
    });
    return ExitCode.failure;
  }
  const text = lifecycleText(event);
  if (text === undefined) return ExitCode.ok;
  if (config.session.launch === undefined) {
    logger.info('no bound topic: set SESSION_STREAM and SESSION_TOPIC (or TRIGGER_MESSAGE_ID)', {
      event: event.hook_event_name,
    });
    return ExitCode.ok;
  }
  let runtime: ZulipRuntime | undefined;
  try {
    // The hook only posts: no admission gate to resolve, nothing else to open.
    runtime = await openZulipRuntime({ settings: { ...config, admissionList: undefined }, logger });
    const call = { signal: AbortSignal.timeout(config.toolDeadlineMs) };
    const topic = await boundTopic(runtime, config, call);
    if (topic === undefined) {
      logger.warn('the bound conversation is not a stream topic; nothing posted', {
        event: event.hook_event_name,
      });
      return ExitCode.ok;
    }
    const posted = await postMessage(runtime.services, { kind: 'stream', ...topic }, text, {
      overLength: 'refuse',
      signal: call.signal,
    });
    if ('isError' in posted) {
      logger.error('the lifecycle message may not have been posted', { code: posted.code });
      return ExitCode.failure;
    }
    logger.info('posted the session lifecycle', { event: event.hook_event_name, messageId: posted.ids[0] });
    return ExitCode.ok;
  } catch (err) {
    // Said already: the same line went to the topic a moment ago (a repeated notification).
    if (isToolError(err, 'TOOLS_ALREADY_SENT')) return ExitCode.ok;
    const problem = startupConfigurationProblem(err);
    if (problem !== undefined) {
      reportInvalidConfiguration(stderr, 'zulip-mcp hook', [problem]);
      return ExitCode.failure;
    }
    logger.error('the lifecycle message was not posted', { code: errorCode(err) ?? 'UNKNOWN', err });
    return ExitCode.failure;
  } finally {
    await runtime?.close();
  }
}
