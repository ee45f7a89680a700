// A stand-in for the agent CLIs (claude, codex, opencode) in tests and the bench. The launcher
// finds it on PATH under the backend's name (a shim in a temp dir imports this file). It reads
// its argv and stdin as the real CLI does (clis.mjs: a command line the real one refuses is
// refused the same way), records what it was given, then does what an agent does: reads the
// zulip server out of that configuration, starts it, and talks MCP to it: set_context → reply →
// listen → end_session.
//
// Behaviour: STUB_MODE (environment) or a "[stub:MODE]" in the trigger message picks it:
//   teammate (default)  reply, then listen and answer until dismissed
//   quick               reply once, end_session, exit 0
//   hang                set_context, then wait forever (for time limits and shutdown)
//   approve             (claude) wants to run Bash: asks through --permission-prompt-tool as
//                       Claude Code does, replies with what came of it, then listens
//   fail                exit 3 at once
//   bench               record the start time and exit 0 at once (no MCP)
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  CliUsageError,
  claudePermissionDecision,
  claudePermissionPromptTool,
  claudePrompt,
  claudeRefusal,
  claudeSession,
  codexPrompt,
  codexRefusal,
  machineOutput,
  opencodeConfig,
  opencodePrompt,
  outputWriter,
  parseClaude,
  parseCodexExec,
  parseOpencodeRun,
  readStdin,
} from './clis.mjs';

const startedAt = performance.timeOrigin + performance.now();
const backend = basename(process.argv[1] ?? 'agent');
const argv = process.argv.slice(2);
const recordDir = process.env.STUB_RECORD_DIR;
const base = recordDir === undefined ? undefined : join(recordDir, `${backend}-${process.pid}`);
let mode = process.env.STUB_MODE ?? 'teammate';

function event(entry) {
  if (base !== undefined)
    appendFileSync(`${base}.events.jsonl`, `${JSON.stringify({ ...entry, at: Date.now() })}\n`);
}

/** `${VAR}`, `${VAR:-default}` and `$VAR`, expanded from this process's environment, as Claude Code does. */
function expand(value) {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_m, a, d, b) => {
      const v = process.env[a ?? b];
      return v !== undefined && v !== '' ? v : (d ?? '');
    },
  );
}

/** A TOML value as the launcher writes it in -c overrides: a string, a list of strings, or a table of strings. */
function toml(value) {
  if (value.startsWith('{')) {
    const table = {};
    for (const m of value.matchAll(/("(?:\\.|[^"\\])*")=("(?:\\.|[^"\\])*")/g))
      table[JSON.parse(m[1])] = JSON.parse(m[2]);
    return table;
  }
  return JSON.parse(value);
}

/**
 * The prompt and the zulip server this backend was told about, read from its argv, stdin and
 * configuration the way the real CLI reads them (see clis.mjs).
 */
function serverFromConfig(stdin) {
  if (backend === 'claude') {
    const parsed = parseClaude(argv);
    if (parsed.options.print !== true)
      throw new CliUsageError('stand-in: only claude --print is modelled', 1);
    const prompt = claudePrompt(parsed, stdin);
    const [file] = parsed.options['mcp-config'] ?? [];
    const config = JSON.parse(readFileSync(file, 'utf8'));
    const entry = config.mcpServers.zulip;
    const env = Object.fromEntries(Object.entries(entry.env ?? {}).map(([k, v]) => [k, expand(v)]));
    return {
      config,
      options: parsed.options,
      // What Claude Code does before each call of a zulip tool.
      refusal: (_annotations, tool) => claudeRefusal(parsed, tool),
      permissionTool: claudePermissionPromptTool(parsed),
      output: machineOutput('claude', parsed),
      session: claudeSession(parsed, process.env.HOME ?? process.cwd()),
      prompt,
      server: { command: entry.command, args: entry.args ?? [], env, cwd: entry.cwd },
    };
  }
  if (backend === 'codex') {
    const parsed = parseCodexExec(argv);
    // What codex exec says on stderr before it starts (0.171.0): nothing for "-".
    if (parsed.prompt === undefined) process.stderr.write('Reading prompt from stdin...\n');
    else if (parsed.prompt !== '-') process.stderr.write('Reading additional input from stdin...\n');
    const prompt = codexPrompt(parsed, stdin);
    const overrides = {};
    for (const item of parsed.options.config ?? []) {
      const eq = item.indexOf('=');
      overrides[item.slice(0, eq)] = toml(item.slice(eq + 1));
    }
    const key = 'mcp_servers.zulip';
    const env = { ...(overrides[`${key}.env`] ?? {}) };
    for (const name of overrides[`${key}.env_vars`] ?? [])
      if (process.env[name] !== undefined) env[name] = process.env[name];
    return {
      config: overrides,
      options: parsed.options,
      // What codex does before each call of a zulip tool (the annotations come from tools/list).
      refusal: (annotations) => codexRefusal(parsed, overrides, annotations),
      output: machineOutput('codex', parsed),
      prompt,
      server: {
        command: overrides[`${key}.command`],
        args: overrides[`${key}.args`] ?? [],
        env,
        cwd: overrides[`${key}.cwd`],
      },
    };
  }
  const parsed = parseOpencodeRun(argv);
  const prompt = opencodePrompt(parsed, stdin);
  const config = JSON.parse(opencodeConfig(process.env.OPENCODE_CONFIG_CONTENT ?? '{}', process.cwd()));
  const entry = config.mcp.zulip;
  return {
    config,
    options: parsed.options,
    output: machineOutput('opencode', parsed),
    prompt,
    server: { command: entry.command[0], args: entry.command.slice(1), env: entry.environment ?? {} },
  };
}

const pick = (prefixes) =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => prefixes.some((p) => k.startsWith(p))));

function record(extra) {
  if (base === undefined) return;
  writeFileSync(
    `${base}.json`,
    JSON.stringify({
      backend,
      pid: process.pid,
      startedAt,
      argv,
      cwd: process.cwd(),
      env: pick(['ZULIP_', 'SESSION_', 'TRIGGER_', 'OPENCODE_', 'STUB_', 'TEST_']),
      ...extra,
    }),
  );
}

// Agents print what they see; the launcher must keep secrets out of the log. (On stderr: stdout
// carries the machine-readable output when the launcher asks for it.)
process.stderr.write(`stub ${backend}: the key in my environment is ${process.env.TEST_BOT_KEY}\n`);

if (mode === 'bench') {
  record({});
  process.exit(0);
}
if (mode === 'fail') {
  record({});
  process.exit(3);
}

const stdin = await readStdin();
let invocation;
try {
  invocation = serverFromConfig(stdin);
} catch (err) {
  if (!(err instanceof CliUsageError)) throw err;
  // What the real CLI does with a command line it cannot use: a line on stderr and its exit code.
  record({ stdin, usageError: err.message, exitCode: err.exitCode });
  process.stderr.write(`${err.message}\n`);
  process.exit(err.exitCode);
}
const { config, options, prompt, server, refusal, permissionTool, output } = invocation;
const writer = outputWriter(backend, output, (text) => process.stdout.write(text), process.cwd());
/** The prompt's JSON line of ids; undefined when it is missing or mangled (opencode quoting it). */
function conversationOf(text) {
  try {
    const value = JSON.parse(/^Conversation: (.*)$/m.exec(text)?.[1] ?? '');
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}
const conversation = conversationOf(prompt);
record({
  config,
  options,
  prompt,
  stdin,
  server: { command: server.command, args: server.args, envKeys: Object.keys(server.env) },
});
if (conversation === undefined) {
  // A model could not tell where it was called: it answers nowhere, and the run fails.
  process.stderr.write('stand-in: the prompt has no readable Conversation line\n');
  process.exit(4);
}

const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = await import(
  '@modelcontextprotocol/sdk/client/stdio.js'
);
const transport = new StdioClientTransport({
  command: server.command,
  args: server.args,
  env: { ...getDefaultEnvironment(), ...server.env },
  cwd: server.cwd,
  stderr: 'inherit',
});
const client = new Client({ name: `stub-${backend}`, version: '0.0.0' });
await client.connect(transport);
event({ step: 'connected', serverPid: transport.pid });
writer?.start((await client.listTools()).tools.map((t) => t.name));

const annotations = new Map(
  refusal === undefined ? [] : (await client.listTools()).tools.map((t) => [t.name, t.annotations ?? {}]),
);

async function call(name, args) {
  const refused = refusal?.(annotations.get(name), name);
  if (refused !== undefined) {
    // The CLI answers the model with the refusal; the model cannot do what it was asked to.
    event({ step: name, error: refused });
    throw new Error(`${name} failed: ${refused}`);
  }
  const started = writer?.toolStart(name, args);
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 600_000 });
  writer?.toolEnd(started, name, result.content?.[0]?.text ?? '', result.isError === true);
  if (result.isError === true) {
    event({ step: name, error: result.content?.[0]?.text });
    throw new Error(`${name} failed: ${result.content?.[0]?.text}`);
  }
  return result.structuredContent;
}

async function finish(code) {
  writer?.text(code === 0 ? 'Done: I answered in the conversation.' : 'I could not finish.');
  writer?.end(code === 0 ? 'Done: I answered in the conversation.' : 'I could not finish.', code !== 0);
  await client.close();
  process.exit(code);
}

/** The model asks for Bash, which no rule allows: Claude Code asks the permission prompt tool. */
async function askForBash() {
  const input = { command: 'make deploy', description: 'Deploy' };
  let outcome;
  if (permissionTool === undefined) {
    outcome = 'refused: no permission prompt tool, and -p asks nobody';
  } else {
    // The model's call of Bash, which Claude Code puts to the permission prompt tool first.
    writer?.toolStart('Bash', input);
    const result = await client.callTool(
      { name: permissionTool, arguments: { tool_name: 'Bash', input, tool_use_id: 'toolu_01StubBash' } },
      undefined,
      { timeout: 600_000 },
    );
    const decision = claudePermissionDecision(result);
    outcome =
      decision.behavior === 'allow'
        ? `allowed: ran ${decision.updatedInput.command}`
        : `denied: ${decision.message}`;
  }
  event({ step: 'permission', outcome });
  return outcome;
}

if (conversation.stream_id === undefined) {
  // A DM: read it, answer it, done.
  const read = await call('get_message', { message_id: conversation.trigger_message_id });
  const asked = /\[stub:(\w+)\]/.exec(read.text)?.[1] === 'approve' ? `; Bash ${await askForBash()}` : '';
  // Each answer names its message: the same words twice would be refused (send once).
  await call('send_dm', {
    to: conversation.dm_user_ids,
    content: `${backend} answers your message ${conversation.trigger_message_id}.${asked}`,
  });
  event({ step: 'answered-dm' });
  await finish(0);
}

const context = await call('set_context', {
  stream: conversation.stream_id,
  topic: conversation.topic,
  trigger_message_id: conversation.trigger_message_id,
});
// What an agent reads is the text: the trigger's message line is marked →.
const triggerLine = context.text.split('\n').find((line) => line.startsWith('→ ')) ?? '';
mode = /\[stub:(\w+)\]/.exec(triggerLine)?.[1] ?? mode;
event({ step: 'set_context', mode, topic: conversation.topic });

if (mode === 'hang') {
  setInterval(() => undefined, 1 << 30);
  await new Promise(() => undefined);
}

await call('reply', { content: `${backend} is on it.` });
if (mode === 'approve') await call('reply', { content: `Bash ${await askForBash()}` });
if (mode !== 'quick') {
  for (;;) {
    const heard = await call('listen', { timeout_seconds: 60 });
    // Interrupt notes are indented lines of the text; the typed fields count them and list ids.
    const interrupts = [];
    for (const line of heard.text.split('\n')) {
      if (line.startsWith('  Interrupt: ')) interrupts.push(line.slice('  Interrupt: '.length));
      else if (line.startsWith('    ') && interrupts.length > 0)
        interrupts.push(`${interrupts.pop()} ${line.trim()}`);
    }
    // The messages an agent got, as a model reads them: new messages, and those the notes pass on.
    const passedOn = interrupts.flatMap((note) =>
      [...note.matchAll(/\bid=(\d+)\]/g)].map((m) => Number(m[1])),
    );
    event({ step: 'listen', status: heard.status, interrupts, messages: heard.ids, passedOn });
    if (heard.status === 'dismissed' || heard.status === 'ended' || heard.status === 'cancelled') break;
    // The conversation was renamed or moved: the session follows it; listen again there.
    if (heard.status === 'timeout' || heard.status === 'moved') continue;
    const parts = [];
    if (heard.ids.length > 0) parts.push(`${backend} read ${heard.ids.join(',')}`);
    if (interrupts.length > 0)
      parts.push(`${backend} got an interrupt: ${interrupts.join(' | ').slice(0, 300)}`);
    let answer = parts.join('; ');
    // A reply hands over what arrived meanwhile: the agent answers that too, then listens again.
    // A reply refused because the session ended meanwhile (a dismissal) ends the loop, as for an agent.
    let sent = true;
    while (answer !== undefined && sent) {
      const replied = await call('reply', { content: answer }).catch(() => undefined);
      sent = replied !== undefined;
      const arrived = replied?.arrived_ids ?? [];
      if (arrived.length > 0) event({ step: 'reply', arrived });
      answer = arrived.length > 0 ? `${backend} read ${arrived.join(',')}` : undefined;
    }
    if (!sent) break;
  }
}
await call('end_session', {});
event({ step: 'end_session' });
await finish(0);
