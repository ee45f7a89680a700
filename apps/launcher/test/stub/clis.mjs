import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

// How each real agent CLI reads its command line and stdin, for the stand-in agent (agent.mjs).
// Recorded from the real CLIs installed from npm (`@anthropic-ai/claude-code@2.1.332`,
// `@openai/codex@0.171.0`, `opencode-ai@1.18.33`): their --help, and what each handed a model
// API stub on loopback (no network) for a given argv and stdin. What is not modelled here (a
// subcommand, an option the launcher never passes) fails loudly instead of being guessed.
//
// The parsers read options the way the real parsers do (commander for Claude Code, clap for
// Codex, yargs for OpenCode), so an argument that starts with "-" where an option may stand is
// read as an option, as the real CLI reads it: a prompt like "--system-prompt=..." there is an
// option, not a prompt.

/** A usage error, as the real CLI reports it: a line on stderr and an exit code. */
export class CliUsageError extends Error {
  constructor(message, exitCode) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** `--name`: 'bool', 'value' (required), 'optional' (takes the next arg unless it starts with "-"), 'variadic'. */
const CLAUDE_OPTIONS = {
  '--add-dir': 'variadic',
  '--agent': 'value',
  '--agents': 'value',
  '--allow-dangerously-skip-permissions': 'bool',
  '--allowedTools': 'variadic',
  '--allowed-tools': 'variadic',
  '--append-system-prompt': 'value',
  '--autocompact': 'value',
  '--ax-screen-reader': 'bool',
  '--bg': 'bool',
  '--background': 'bool',
  '--bare': 'bool',
  '--betas': 'variadic',
  '--brief': 'bool',
  '--chrome': 'bool',
  '--cloud': 'optional',
  '--continue': 'bool',
  '--dangerously-skip-permissions': 'bool',
  '--debug': 'optional',
  '--debug-file': 'value',
  '--desktop': 'bool',
  '--disable-slash-commands': 'bool',
  '--disallowedTools': 'variadic',
  '--disallowed-tools': 'variadic',
  '--effort': 'value',
  '--environment': 'value',
  '--exclude-dynamic-system-prompt-sections': 'bool',
  '--fallback-model': 'value',
  '--file': 'variadic',
  '--fork-session': 'bool',
  '--forward-subagent-text': 'bool',
  '--from-pr': 'optional',
  '--help': 'bool',
  '--ide': 'bool',
  '--include-hook-events': 'bool',
  '--include-partial-messages': 'bool',
  '--input-format': 'value',
  '--json-schema': 'value',
  '--max-budget-usd': 'value',
  '--mcp-config': 'variadic',
  '--model': 'value',
  '--name': 'value',
  '--no-chrome': 'bool',
  '--no-session-persistence': 'bool',
  '--output-format': 'value',
  '--permission-mode': 'value',
  '--permission-prompts': 'value',
  // Hidden from --help (commander's hideHelp) but accepted: "MCP tool to use for permission
  // prompts (only works with --print)".
  '--permission-prompt-tool': 'value',
  '--plugin-dir': 'value',
  '--plugin-url': 'value',
  '--print': 'bool',
  '--prompt-suggestions': 'optional',
  '--remote-control': 'optional',
  '--remote-control-session-name-prefix': 'value',
  '--replay-user-messages': 'bool',
  '--restricted': 'bool',
  '--resume': 'optional',
  '--safe-mode': 'bool',
  '--session-id': 'value',
  '--setting-sources': 'value',
  '--settings': 'value',
  '--strict-mcp-config': 'bool',
  '--system-prompt': 'value',
  '--system-prompt-snapshot': 'value',
  '--teleport': 'optional',
  '--tmux': 'optional',
  '--tools': 'variadic',
  '--verbose': 'bool',
  '--version': 'bool',
  '--worktree': 'optional',
};
const CLAUDE_SHORT = {
  '-c': '--continue',
  '-d': '--debug',
  '-h': '--help',
  '-n': '--name',
  '-p': '--print',
  '-r': '--resume',
  '-v': '--version',
  '-w': '--worktree',
};
const CLAUDE_COMMANDS = [
  'agents',
  'attach',
  'auth',
  'auto-mode',
  'doctor',
  'gateway',
  'import',
  'install',
  'logs',
  'mcp',
  'plugin',
  'plugins',
  'purge',
  'respawn',
  'rm',
  'setup-token',
  'stop',
  'kill',
  'ultrareview',
  'update',
  'upgrade',
];

const looksLikeOption = (arg) => arg.length > 1 && arg.startsWith('-');

function push(options, name, value) {
  const key = name.replace(/^-+/, '');
  if (value === true) options[key] = true;
  else options[key] = [...(options[key] ?? []), value];
}

/**
 * Claude Code's command line, as its commander parser reads it: options anywhere (until "--"),
 * `--name=value`, a variadic option (`--allowedTools`, `--mcp-config`, ...) takes every
 * following argument that does not start with "-", an unknown option is an error (exit 1), and
 * the one operand is the prompt.
 */
export function parseClaude(argv) {
  const options = {};
  const operands = [];
  let variadic;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      operands.push(...argv.slice(i + 1));
      break;
    }
    if (variadic !== undefined && !looksLikeOption(arg)) {
      push(options, variadic, arg);
      continue;
    }
    variadic = undefined;
    if (!looksLikeOption(arg)) {
      operands.push(arg);
      continue;
    }
    let name = arg;
    let attached;
    if (arg.startsWith('--') && arg.includes('=')) {
      name = arg.slice(0, arg.indexOf('='));
      attached = arg.slice(arg.indexOf('=') + 1);
    } else if (!arg.startsWith('--') && arg.length > 2) {
      name = arg.slice(0, 2);
      attached = arg.slice(2);
    }
    if (!arg.startsWith('--')) name = CLAUDE_SHORT[name] ?? name;
    const kind = CLAUDE_OPTIONS[name];
    if (kind === undefined || (attached !== undefined && kind === 'bool' && arg.startsWith('--'))) {
      throw new CliUsageError(`error: unknown option '${arg}'`, 1);
    }
    if (kind === 'bool') {
      push(options, name, true);
      // `-pc`: more short flags in one argument.
      if (attached !== undefined) argv.splice(i + 1, 0, `-${attached}`);
      continue;
    }
    let value = attached;
    if (value === undefined) {
      const next = argv[i + 1];
      if (kind === 'optional' && (next === undefined || looksLikeOption(next))) value = true;
      else if (next === undefined)
        throw new CliUsageError(`error: option '${name} <value>' argument missing`, 1);
      else value = argv[++i];
    }
    push(options, name, value);
    if (kind === 'variadic') variadic = name;
  }
  if (operands.length > 0 && CLAUDE_COMMANDS.includes(operands[0])) {
    throw new CliUsageError(`stand-in: the "${operands[0]}" subcommand is not modelled`, 1);
  }
  return { options, prompt: operands[0] };
}

/** Claude Code's prompt with --print: the operand, then a line of stdin if any; stdin alone, verbatim. */
export function claudePrompt(parsed, stdin) {
  const prompt =
    parsed.prompt === undefined ? stdin : stdin === '' ? parsed.prompt : `${parsed.prompt}\n${stdin}`;
  if (prompt === undefined || prompt.trim() === '') {
    throw new CliUsageError(
      'Error: Input must be provided either through stdin or as a prompt argument when using --print',
      1,
    );
  }
  return prompt;
}

/**
 * Why `claude -p` refuses a call of a zulip tool, or undefined when it runs it: with --print
 * there is no one to ask, so a tool runs only when --allowedTools names it (`mcp__zulip` for
 * every tool of the server, `mcp__zulip__<tool>` for one; comma or space separated) or the
 * permission mode skips asking.
 */
export function claudeRefusal(parsed, tool) {
  const allowed = (parsed.options.allowedTools ?? [])
    .concat(parsed.options['allowed-tools'] ?? [])
    .flatMap((item) => item.split(/[\s,]+/));
  if (allowed.includes('mcp__zulip') || allowed.includes(`mcp__zulip__${tool}`)) return undefined;
  if (parsed.options['dangerously-skip-permissions'] === true) return undefined;
  if ((parsed.options['permission-mode'] ?? []).includes('bypassPermissions')) return undefined;
  return `Claude requested permissions to use mcp__zulip__${tool}, but you haven't granted it yet.`;
}

/**
 * What `claude -p` does when the model calls a tool its rules do not allow (Bash, say): with
 * `--permission-prompt-tool mcp__<server>__<tool>` it calls that MCP tool with
 * `{ tool_name, input, tool_use_id }` and reads the first text block of the result as JSON,
 * `{ behavior: "allow", updatedInput }` or `{ behavior: "deny", message }` (anything else denies);
 * without it the call is refused. Returns the zulip tool to call, or undefined.
 */
export function claudePermissionPromptTool(parsed) {
  const [tool] = parsed.options['permission-prompt-tool'] ?? [];
  if (tool === undefined) return undefined;
  const match = /^mcp__zulip__(\w+)$/.exec(tool);
  if (match === null) throw new CliUsageError(`stand-in: permission prompt tool ${tool} is not modelled`, 1);
  return match[1];
}

/**
 * Claude Code's reading of a permission prompt tool's answer (PermissionPromptToolResult): the
 * result's first text block, as JSON. A result with `structuredContent` reaches it as one string,
 * not blocks, which Claude Code 2.1.332 refuses ("Permission prompt tool returned an invalid
 * result. Expected a single text block param with type="text" and a string text value.").
 */
export function claudePermissionDecision(result) {
  if (result.structuredContent !== undefined || result.content?.[0]?.type !== 'text')
    throw new Error(
      'Permission prompt tool returned an invalid result. Expected a single text block param with type="text" and a string text value.',
    );
  const text = result.content[0].text;
  try {
    const value = JSON.parse(text);
    if (value?.behavior === 'allow' && typeof value.updatedInput === 'object' && value.updatedInput !== null)
      return { behavior: 'allow', updatedInput: value.updatedInput };
    if (value?.behavior === 'deny' && typeof value.message === 'string')
      return { behavior: 'deny', message: value.message };
  } catch {}
  return { behavior: 'deny', message: 'The permission prompt tool returned an invalid permission result.' };
}

/** `codex exec` options: 'bool', 'value', or 'values' (one or more, greedy). */
const CODEX_EXEC_OPTIONS = {
  '--config': 'value',
  '--enable': 'value',
  '--disable': 'value',
  '--remote': 'value',
  '--remote-auth-token-env': 'value',
  '--strict-config': 'bool',
  '--image': 'values',
  '--model': 'value',
  '--oss': 'bool',
  '--local-provider': 'value',
  '--profile': 'value',
  '--sandbox': 'value',
  '--approve-for-me': 'bool',
  '--dangerously-bypass-approvals-and-sandbox': 'bool',
  '--dangerously-bypass-hook-trust': 'bool',
  '--cd': 'value',
  '--worktree': 'bool',
  '--add-dir': 'value',
  '--thread-source': 'value',
  '--cyber-access-program': 'value',
  '--skip-git-repo-check': 'bool',
  '--trust': 'bool',
  '--ephemeral': 'bool',
  '--ignore-user-config': 'bool',
  '--ignore-rules': 'bool',
  '--output-schema': 'value',
  '--color': 'value',
  '--json': 'bool',
  '--output-last-message': 'value',
  '--help': 'bool',
  '--version': 'bool',
};
const CODEX_SHORT = {
  '-c': '--config',
  '-i': '--image',
  '-m': '--model',
  '-p': '--profile',
  '-s': '--sandbox',
  '-C': '--cd',
  '-o': '--output-last-message',
  '-h': '--help',
  '-V': '--version',
};
const CODEX_EXEC_COMMANDS = ['resume', 'fork', 'review', 'help'];

/**
 * `codex exec`'s command line, as its clap parser reads it: an argument that starts with "-" is
 * an option until "--" (an unknown one is an error, exit 2, as is a missing value), and the one
 * positional is the prompt (a subcommand name there is the subcommand).
 */
export function parseCodexExec(argv) {
  if (argv[0] !== 'exec') throw new CliUsageError('stand-in: only `codex exec` is modelled', 2);
  const options = {};
  const positionals = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!looksLikeOption(arg)) {
      positionals.push(arg);
      continue;
    }
    let name = arg;
    let attached;
    if (arg.startsWith('--') && arg.includes('=')) {
      name = arg.slice(0, arg.indexOf('='));
      attached = arg.slice(arg.indexOf('=') + 1);
    } else if (!arg.startsWith('--') && arg.length > 2) {
      name = arg.slice(0, 2);
      attached = arg.slice(arg[2] === '=' ? 3 : 2);
    }
    if (!arg.startsWith('--')) name = CODEX_SHORT[name] ?? name;
    const kind = CODEX_EXEC_OPTIONS[name];
    if (kind === undefined) {
      const shown = arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
      throw new CliUsageError(`error: unexpected argument '${shown}' found`, 2);
    }
    if (kind === 'bool') {
      push(options, name, true);
      continue;
    }
    if (attached !== undefined) {
      push(options, name, attached);
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined || looksLikeOption(next)) {
      if (next !== undefined && !CODEX_EXEC_OPTIONS[next] && !CODEX_SHORT[next])
        throw new CliUsageError(`error: unexpected argument '${next}' found`, 2);
      throw new CliUsageError(`error: a value is required for '${name}' but none was supplied`, 2);
    }
    push(options, name, argv[++i]);
    if (kind === 'values') {
      while (argv[i + 1] !== undefined && !looksLikeOption(argv[i + 1])) push(options, name, argv[++i]);
    }
  }
  if (positionals.length > 0 && CODEX_EXEC_COMMANDS.includes(positionals[0])) {
    throw new CliUsageError(`stand-in: the "exec ${positionals[0]}" subcommand is not modelled`, 2);
  }
  if (positionals.length > 1)
    throw new CliUsageError(`error: unexpected argument '${positionals[1]}' found`, 2);
  return { options, prompt: positionals[0] };
}

/**
 * `codex exec`'s prompt: with no prompt argument, or "-", all of stdin, verbatim (empty: exit
 * 1); with one, stdin (when there is any) follows it in a `<stdin>` block.
 */
export function codexPrompt(parsed, stdin) {
  if (parsed.prompt === undefined || parsed.prompt === '-') {
    if (stdin.trim() === '') throw new CliUsageError('No prompt provided via stdin.', 1);
    return stdin;
  }
  if (stdin === '') return parsed.prompt;
  return `${parsed.prompt}\n\n<stdin>\n${stdin}${stdin.endsWith('\n') ? '' : '\n'}</stdin>`;
}

/**
 * Why `codex exec` refuses a call of an MCP tool, or undefined when it runs it: a tool that needs
 * approval is refused, since `codex exec` runs with approval policy "never" (its header says
 * `approval: never`; only --approve-for-me, which hands approvals to an automatic reviewer, makes
 * it `on-request`, and that reviewer is a model the stand-in does not play). Whether a tool needs
 * approval is the server's `default_tools_approval_mode` (default `auto`) applied to the tool's
 * annotations, as codex decides it.
 */
export function codexRefusal(parsed, overrides, annotations = {}) {
  const mode = overrides['mcp_servers.zulip.default_tools_approval_mode'] ?? 'auto';
  let needs;
  if (mode === 'approve') needs = false;
  else if (mode === 'prompt') needs = true;
  else if (mode === 'writes') needs = annotations.readOnlyHint !== true;
  else if (mode === 'auto') {
    if (annotations.destructiveHint === true) needs = true;
    else if (annotations.readOnlyHint === true) needs = false;
    else needs = (annotations.destructiveHint ?? true) || (annotations.openWorldHint ?? true);
  } else throw new CliUsageError(`Error loading config.toml: unknown variant \`${mode}\``, 1);
  if (!needs) return undefined;
  if (parsed.options['approve-for-me'] || parsed.options['dangerously-bypass-approvals-and-sandbox'])
    throw new CliUsageError('stand-in: approvals other than "never" are not modelled', 1);
  return 'MCP tool call requires approval, but approval policy is never';
}

/** `opencode run` options (yargs): 'bool', 'string', 'number' or 'array'. */
const OPENCODE_RUN_OPTIONS = {
  help: 'bool',
  version: 'bool',
  'print-logs': 'bool',
  'log-level': 'string',
  pure: 'bool',
  command: 'string',
  continue: 'bool',
  session: 'string',
  fork: 'bool',
  share: 'bool',
  model: 'string',
  agent: 'string',
  format: 'string',
  file: 'array',
  title: 'string',
  attach: 'string',
  password: 'string',
  username: 'string',
  dir: 'string',
  port: 'number',
  variant: 'string',
  thinking: 'bool',
  interactive: 'bool',
  auto: 'bool',
};
const OPENCODE_SHORT = {
  h: 'help',
  v: 'version',
  c: 'continue',
  s: 'session',
  m: 'model',
  f: 'file',
  p: 'password',
  u: 'username',
  i: 'interactive',
};

/**
 * `opencode run`'s command line, as its yargs parser (strict) reads it: options anywhere until
 * "--", `--name=value`, an unknown option prints the usage and exits 1; every other argument is
 * a word of the message.
 */
export function parseOpencodeRun(argv) {
  if (argv[0] !== 'run') throw new CliUsageError('stand-in: only `opencode run` is modelled', 1);
  const options = {};
  const message = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      message.push(...argv.slice(i + 1));
      break;
    }
    if (!looksLikeOption(arg) || /^-\d/.test(arg)) {
      message.push(arg);
      continue;
    }
    const names = [];
    let attached;
    if (arg.startsWith('--')) {
      const body = arg.slice(2);
      const eq = body.indexOf('=');
      names.push(eq < 0 ? body : body.slice(0, eq));
      if (eq >= 0) attached = body.slice(eq + 1);
    } else {
      for (const ch of arg.slice(1)) names.push(OPENCODE_SHORT[ch] ?? `-${ch}`);
    }
    names.forEach((raw, n) => {
      const negated = raw.startsWith('no-') && OPENCODE_RUN_OPTIONS[raw.slice(3)] === 'bool';
      const name = negated ? raw.slice(3) : raw;
      const kind = OPENCODE_RUN_OPTIONS[name];
      // It prints its usage on stderr, with no line naming the argument, and exits 1.
      if (kind === undefined)
        throw new CliUsageError('opencode run [message..]\n\nrun opencode with a message', 1);
      const last = n === names.length - 1;
      if (kind === 'bool') {
        options[name] = negated ? false : attached === undefined ? true : attached !== 'false';
        if (last && attached === undefined && (argv[i + 1] === 'true' || argv[i + 1] === 'false'))
          options[name] = argv[++i] === 'true';
        return;
      }
      if (attached !== undefined) {
        options[name] = kind === 'array' ? [attached] : attached;
        return;
      }
      if (!last || argv[i + 1] === undefined || looksLikeOption(argv[i + 1])) {
        options[name] = kind === 'array' ? [] : '';
        return;
      }
      if (kind === 'array') {
        options[name] = [];
        while (argv[i + 1] !== undefined && !looksLikeOption(argv[i + 1])) options[name].push(argv[++i]);
      } else options[name] = argv[++i];
    });
  }
  return { options, message };
}

/**
 * `opencode run`'s message: each word that holds a space is put in double quotes with its inner
 * quotes escaped, the words joined by spaces; stdin (when not a terminal, and not empty) follows
 * on a line of its own, verbatim, or is the whole message when there are no words.
 */
export function opencodePrompt(parsed, stdin) {
  let message = parsed.message
    .map((word) => (word.includes(' ') ? `"${word.replace(/"/g, '\\"')}"` : word))
    .join(' ');
  if (stdin !== '') message = message === '' ? stdin : `${message}\n${stdin}`;
  if (message.trim() === '' && parsed.options.command === undefined) {
    throw new CliUsageError('Error: You must provide a message or a command', 1);
  }
  return message;
}

/**
 * OpenCode's configuration text as it reads it, OPENCODE_CONFIG_CONTENT included: before the JSON
 * is parsed, `{env:NAME}` becomes the variable's value (empty when unset) and `{file:path}` the
 * file's trimmed content, JSON-escaped (`~/` is the home directory, a relative path starts from
 * `dir`; a missing file is an error; one on a line commented out with `//` is left alone).
 */
export function opencodeConfig(text, dir, env = process.env) {
  const withEnv = text.replace(/\{env:([^}]+)\}/g, (_m, name) => env[name] || '');
  return withEnv.replace(/\{file:[^}]+\}/g, (token, offset) => {
    const line = withEnv.slice(withEnv.lastIndexOf('\n', offset - 1) + 1, offset).trimStart();
    if (line.startsWith('//')) return token;
    let path = token.slice('{file:'.length, -1);
    if (path.startsWith('~/')) path = join(homedir(), path.slice(2));
    const full = isAbsolute(path) ? path : resolve(dir, path);
    let content;
    try {
      content = readFileSync(full, 'utf8');
    } catch {
      throw new CliUsageError(`Error: bad file reference: "${token}" ${full} does not exist`, 1);
    }
    return JSON.stringify(content.trim()).slice(1, -1);
  });
}

/** All of stdin, as the real CLIs read it when it is not a terminal (a closed stdin reads as empty). */
export async function readStdin() {
  if (process.stdin.isTTY) return '';
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The machine-readable output a CLI was asked for, or undefined for its plain text: `claude -p
 * --output-format stream-json` (which needs --verbose: without it the real CLI exits 1 with
 * "Error: When using --print, --output-format=stream-json requires --verbose"), `codex exec
 * --json`, `opencode run --format json`.
 */
export function machineOutput(backend, parsed) {
  if (backend === 'claude') {
    const [format] = parsed.options['output-format'] ?? [];
    if (format === undefined || format === 'text') return undefined;
    if (format === 'stream-json' && parsed.options.verbose !== true)
      throw new CliUsageError('Error: When using --print, --output-format=stream-json requires --verbose', 1);
    if (format !== 'stream-json')
      throw new CliUsageError(`stand-in: --output-format ${format} is not modelled`, 1);
    return 'stream-json';
  }
  if (backend === 'codex') return parsed.options.json === true ? 'json' : undefined;
  const format = parsed.options.format;
  if (format === undefined || format === 'default') return undefined;
  if (format !== 'json') throw new CliUsageError(`stand-in: --format ${format} is not modelled`, 1);
  return 'json';
}

const rid = (prefix, n = 24) =>
  `${prefix}${Array.from({ length: n }, () => 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(Math.random() * 36)]).join('')}`;
const uuid = () => globalThis.crypto.randomUUID();

/**
 * Prints what each real CLI prints in its machine-readable mode, one JSON object a line, for the
 * events an agent run has: the start, each MCP tool call (begun, then its result), the model's
 * text, and the end. The shapes are the documented ones: Claude Code's stream-json messages
 * (`system`/`init`, `assistant` with `tool_use` and `text` blocks, `user` with `tool_result`,
 * `result`), Codex's exec events (`thread.started`, `turn.started`, `item.started` /
 * `item.completed` of `mcp_tool_call` and `agent_message` items, `turn.completed`), OpenCode's
 * run events (`step_start`, `tool_use` when a tool finished, `text`, `step_finish`).
 */
export function outputWriter(backend, format, write, cwd) {
  if (format === undefined) return undefined;
  const line = (value) => write(`${JSON.stringify(value)}\n`);
  const startedAt = Date.now();
  if (backend === 'claude') {
    const session = uuid();
    const model = 'claude-sonnet-4-5-20250929';
    let turns = 0;
    const assistant = (content) =>
      line({
        type: 'assistant',
        message: {
          model,
          id: rid('msg_01'),
          type: 'message',
          role: 'assistant',
          content,
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: 10,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 5,
            service_tier: 'standard',
          },
        },
        parent_tool_use_id: null,
        session_id: session,
        uuid: uuid(),
      });
    return {
      start(tools) {
        line({
          type: 'system',
          subtype: 'init',
          cwd,
          session_id: session,
          tools: [
            'Task',
            'Bash',
            'Glob',
            'Grep',
            'Read',
            'Edit',
            'Write',
            'WebFetch',
            ...tools.map((t) => `mcp__zulip__${t}`),
          ],
          mcp_servers: [{ name: 'zulip', status: 'connected' }],
          model,
          permissionMode: 'default',
          slash_commands: ['compact', 'context', 'cost', 'init', 'review'],
          apiKeySource: 'ANTHROPIC_API_KEY',
          claude_code_version: '2.1.332',
          output_style: 'default',
          agents: ['general-purpose'],
          skills: [],
          plugins: [],
          uuid: uuid(),
        });
      },
      toolStart(tool, args) {
        turns++;
        const id = rid('toolu_01');
        assistant([
          {
            type: 'tool_use',
            id,
            name: tool.startsWith('mcp__') || /^[A-Z]/.test(tool) ? tool : `mcp__zulip__${tool}`,
            input: args,
          },
        ]);
        return id;
      },
      toolEnd(id, _tool, text, isError) {
        line({
          type: 'user',
          message: {
            role: 'user',
            content: [
              {
                tool_use_id: id,
                type: 'tool_result',
                content: [{ type: 'text', text }],
                ...(isError ? { is_error: true } : {}),
              },
            ],
          },
          parent_tool_use_id: null,
          session_id: session,
          uuid: uuid(),
        });
      },
      text(text) {
        turns++;
        assistant([{ type: 'text', text }]);
      },
      end(result, isError) {
        line({
          type: 'result',
          subtype: isError ? 'error_during_execution' : 'success',
          is_error: isError,
          duration_ms: Date.now() - startedAt,
          duration_api_ms: 0,
          num_turns: turns,
          result,
          session_id: session,
          total_cost_usd: 0,
          usage: {
            input_tokens: 10 * turns,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 5 * turns,
            server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 },
            service_tier: 'standard',
          },
          modelUsage: {},
          permission_denials: [],
          uuid: uuid(),
        });
      },
    };
  }
  if (backend === 'codex') {
    let n = 0;
    return {
      start() {
        line({ type: 'thread.started', thread_id: uuid() });
        line({ type: 'turn.started' });
      },
      toolStart(tool, args) {
        const id = `item_${n++}`;
        line({
          type: 'item.started',
          item: {
            id,
            type: 'mcp_tool_call',
            server: 'zulip',
            tool,
            arguments: args,
            result: null,
            error: null,
            status: 'in_progress',
          },
        });
        return { id, tool, args };
      },
      toolEnd(started, _tool, text, isError) {
        line({
          type: 'item.completed',
          item: {
            id: started.id,
            type: 'mcp_tool_call',
            server: 'zulip',
            tool: started.tool,
            arguments: started.args,
            result: isError ? null : { content: [{ type: 'text', text }], structured_content: null },
            error: isError ? { message: text } : null,
            status: isError ? 'failed' : 'completed',
          },
        });
      },
      text(text) {
        line({ type: 'item.completed', item: { id: `item_${n++}`, type: 'agent_message', text } });
      },
      end(_result, isError) {
        if (isError) line({ type: 'turn.failed', error: { message: 'the run failed' } });
        else
          line({
            type: 'turn.completed',
            usage: { input_tokens: 100, cached_input_tokens: 0, output_tokens: 20 },
          });
      },
    };
  }
  const session = rid('ses_', 26);
  const message = rid('msg_', 26);
  const envelope = (type, part) =>
    line({
      type,
      timestamp: Date.now(),
      sessionID: session,
      part: { id: rid('prt_', 26), sessionID: session, messageID: message, ...part },
    });
  return {
    start() {
      envelope('step_start', { type: 'step-start', snapshot: '4b825dc642cb6eb9a060e54bf8d69288fbee4904' });
    },
    toolStart(tool, args) {
      return { tool, args, start: Date.now() };
    },
    toolEnd(started, _tool, text, isError) {
      envelope('tool_use', {
        type: 'tool',
        callID: rid('call_', 24),
        tool: `zulip_${started.tool}`,
        state: isError
          ? {
              status: 'error',
              input: started.args,
              error: text,
              time: { start: started.start, end: Date.now() },
            }
          : {
              status: 'completed',
              input: started.args,
              output: text,
              title: '',
              metadata: {},
              time: { start: started.start, end: Date.now() },
            },
      });
    },
    text(text) {
      envelope('text', { type: 'text', text, time: { start: Date.now(), end: Date.now() } });
    },
    end() {
      envelope('step_finish', {
        type: 'step-finish',
        reason: 'stop',
        snapshot: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
        cost: 0,
        tokens: { input: 100, output: 20, reasoning: 0, cache: { read: 0, write: 0 } },
      });
    },
  };
}

/**
 * Claude Code's sessions across runs, as `claude -p` keeps them (under the home directory):
 * `--session-id <uuid>` starts one under that id (a malformed or taken id is an error, exit 1),
 * `--resume <id>` carries one on (an unknown id: "No conversation found with session ID: <id>",
 * exit 1). Returns the session's id, or undefined for a run of its own.
 */
export function claudeSession(parsed, home) {
  const file = join(home, '.claude-stub-sessions.json');
  let known = [];
  try {
    known = JSON.parse(readFileSync(file, 'utf8'));
  } catch {}
  const [started] = parsed.options['session-id'] ?? [];
  const [resumed] = parsed.options.resume ?? [];
  if (started !== undefined) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(started))
      throw new CliUsageError('Error: Invalid session ID. Must be a valid UUID.', 1);
    if (known.includes(started))
      throw new CliUsageError(`Error: Session ID ${started} is already in use.`, 1);
    writeFileSync(file, JSON.stringify([...known, started]));
    return started;
  }
  if (typeof resumed === 'string') {
    if (!known.includes(resumed))
      throw new CliUsageError(`No conversation found with session ID: ${resumed}`, 1);
    return resumed;
  }
  return undefined;
}
