import { join } from 'node:path';
import { LauncherError } from './errors.js';
import { expandReferences, type McpServerEntry, referencedVariables } from './mcp-config.js';

/** The agent CLIs the launcher can start. */
export type BackendName = 'claude' | 'codex' | 'opencode';

/** Every backend, in the order `--help` lists them. */
export const backendNames: readonly BackendName[] = ['claude', 'codex', 'opencode'];

/**
 * How Codex approves calls of the zulip server's tools: its `default_tools_approval_mode` for the
 * server. `approve` runs them; `auto` asks before a tool not annotated read-only (every tool that
 * writes, `reply` and `listen` among them), `writes` the same, `prompt` before every tool.
 */
export type CodexToolApproval = 'approve' | 'auto' | 'writes' | 'prompt';

/** Every Codex approval mode, the default first. */
export const codexToolApprovals: readonly CodexToolApproval[] = ['approve', 'auto', 'writes', 'prompt'];

/**
 * Why Codex, configured with `mode` and these extra arguments, cannot run the zulip tools an
 * agent needs; undefined when it can. `codex exec` answers every approval request with its
 * approval policy, "never" (checked with codex 0.171.0: `approval: never`), so any mode but
 * `approve` refuses every tool that writes, unless `--approve-for-me` hands the requests to
 * Codex's automatic reviewer (`approval: on-request`).
 */
export function codexApprovalProblem(
  mode: CodexToolApproval,
  extraArgs: readonly string[],
): string | undefined {
  if (mode === 'approve' || extraArgs.includes('--approve-for-me')) return undefined;
  return `with ${mode}, codex exec would refuse every zulip tool that writes (reply, listen, end_session, send_message…)${mode === 'prompt' ? ' and every other' : ''}: it asks before each, and codex exec answers with its approval policy "never". Use approve, or add --approve-for-me to the codex arguments to let Codex's automatic reviewer answer.`;
}

/** The arguments that make each CLI print its machine-readable output on stdout. */
export function progressArgs(backend: BackendName): string[] {
  switch (backend) {
    case 'claude':
      // `claude -p` prints stream-json only with --verbose ("--output-format=stream-json requires --verbose").
      return ['--output-format', 'stream-json', '--verbose'];
    case 'codex':
      return ['--json'];
    case 'opencode':
      return ['--format', 'json'];
  }
}

/** The name the zulip server has in every configuration the launcher writes for a backend. */
export const SERVER_NAME = 'zulip';

/** What one agent run needs from its backend: how to start it, and the files to write first. */
export interface BackendInvocation {
  /** Executable, looked up on `PATH`: `claude`, `codex` or `opencode`. */
  command: string;
  /** Options only: nothing on the command line comes from Zulip (the prompt goes on stdin). */
  args: string[];
  /** What the agent reads on stdin: the prompt, which each backend reads from there verbatim. */
  stdin: string;
  /** Variables added to the launcher's environment for this run (never on the command line). */
  env: Record<string, string>;
  /** Files to write (mode 0600) before starting, such as Claude Code's MCP configuration. */
  files: { path: string; content: string }[];
  /** Values that must not appear in logs: the secrets the server entry expands to. */
  secrets: string[];
}

/** Inputs of {@link buildInvocation}. */
export interface InvocationInput {
  backend: BackendName;
  /** The zulip server of the user's `.mcp.json`. */
  server: McpServerEntry;
  /** Variables that bind the spawned server to the conversation (`TRIGGER_MESSAGE_ID`, `ZULIP_INTERRUPT_FILE`). */
  binding: Readonly<Record<string, string>>;
  /** The task: what happened and what to do. */
  prompt: string;
  /** Appended to the backend's own system prompt. */
  systemPrompt: string;
  /** Extra arguments for this backend, as configured. */
  extraArgs: readonly string[];
  /** A private directory of this run, for the files the backend reads. */
  runDir: string;
  /** The environment references expand against (the launcher's own). */
  env: Readonly<Record<string, string | undefined>>;
  /** Codex only: how it approves the zulip tools. Default `approve`. */
  codexToolApproval?: CodexToolApproval | undefined;
  /**
   * Claude Code only: put the permission requests of tools its rules do not allow to the people of
   * the conversation, through the zulip server's `permission_prompt` (`--permission-prompt-tool`).
   * Needs a stdio server entry (the binding turns the tool on). Default false.
   */
  approvals?: boolean | undefined;
  /** Ask the CLI for its machine-readable output on stdout ({@link progressArgs}), for live progress. */
  progress?: boolean | undefined;
  /**
   * Claude Code only: the CLI session of a DM conversation, which is one session across runs:
   * `new` starts it under this id (`--session-id`), `resume` carries it on (`--resume`).
   */
  session?: { mode: 'new' | 'resume'; id: string } | undefined;
}

/** The zulip server's tool Claude Code's `--permission-prompt-tool` names. */
export const PERMISSION_PROMPT_TOOL = `mcp__${SERVER_NAME}__permission_prompt`;

const SECRET_NAME = /KEY|TOKEN|SECRET|PASS|AUTH|CRED|COOKIE/i;

/** Variables the launcher sets per run: whatever the entry says about them gives way. */
const BINDING_VARIABLES = [
  'SESSION_STREAM',
  'SESSION_TOPIC',
  'TRIGGER_MESSAGE_ID',
  'ZULIP_INTERRUPT_FILE',
  'ZULIP_PERMISSION_PROMPT',
];

function withoutBinding(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !BINDING_VARIABLES.includes(key)));
}

/** Expanded env (or header) values of the entry, and which of them count as secrets. */
function expandAll(
  map: Readonly<Record<string, string>>,
  env: InvocationInput['env'],
  field: 'env' | 'headers',
): { values: Record<string, string>; secrets: string[] } {
  const values: Record<string, string> = {};
  const secrets: string[] = [];
  for (const [key, value] of Object.entries(map)) {
    const expanded = expandReferences(value, env, `${field}.${key}`);
    values[key] = expanded;
    const secret = field === 'headers' || SECRET_NAME.test(key) || referencedVariables(value).length > 0;
    if (secret && expanded.length >= 4) secrets.push(expanded);
  }
  return { values, secrets };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// A TOML basic string: JSON's escapes, plus DEL, and no lone surrogates (TOML has no escape for them).
function tomlString(value: string, field: string): string {
  if (LONE_SURROGATE.test(value)) {
    throw new LauncherError('LAUNCHER_BACKEND_UNSUPPORTED', `${field} is not well-formed Unicode.`, {
      details: { backend: 'codex', field },
    });
  }
  return JSON.stringify(value).replace(/\u007f/g, '\\u007f');
}

function tomlArray(values: readonly string[], field: string): string {
  return `[${values.map((v, i) => tomlString(v, `${field}[${i}]`)).join(',')}]`;
}

function tomlTable(entries: readonly (readonly [string, string])[], field: string): string {
  return `{${entries.map(([k, v]) => `${tomlString(k, field)}=${tomlString(v, `${field}.${k}`)}`).join(',')}}`;
}

function claude(input: InvocationInput): BackendInvocation {
  const { server, binding } = input;
  const file = join(input.runDir, 'mcp.json');
  let entry: Record<string, unknown>;
  let secrets: string[];
  const approvals = input.approvals === true && server.transport === 'stdio';
  if (server.transport === 'stdio') {
    // Claude Code expands the references itself; expanding here only checks each one is set.
    secrets = expandAll(server.env, input.env, 'env').secrets;
    entry = {
      ...server.raw,
      env: { ...server.env, ...binding, ...(approvals ? { ZULIP_PERMISSION_PROMPT: 'on' } : {}) },
    };
  } else {
    secrets = expandAll(server.headers, input.env, 'headers').secrets;
    entry = { ...server.raw };
  }
  return {
    command: 'claude',
    // The prompt on stdin, never on the command line: there a caller's name like
    // "--system-prompt=..." would be read as an option, and --allowedTools and --mcp-config take
    // lists that swallow what follows. `claude -p` with no prompt argument reads it from stdin.
    args: [
      '-p',
      '--allowedTools',
      `mcp__${SERVER_NAME}`,
      '--mcp-config',
      file,
      '--strict-mcp-config',
      '--append-system-prompt',
      input.systemPrompt,
      ...(approvals ? ['--permission-prompt-tool', PERMISSION_PROMPT_TOOL] : []),
      ...(input.progress === true ? progressArgs('claude') : []),
      ...(input.session === undefined
        ? []
        : [input.session.mode === 'new' ? '--session-id' : '--resume', input.session.id]),
      ...input.extraArgs,
    ],
    stdin: input.prompt,
    env: {},
    files: [
      { path: file, content: `${JSON.stringify({ mcpServers: { [SERVER_NAME]: entry } }, null, 2)}\n` },
    ],
    secrets,
  };
}

function codex(input: InvocationInput): BackendInvocation {
  const { server, binding } = input;
  const key = `mcp_servers.${SERVER_NAME}`;
  const overrides: string[] = [];
  const env: Record<string, string> = {};
  let secrets: string[];
  if (server.transport === 'stdio') {
    overrides.push(`${key}.command=${tomlString(server.command, 'command')}`);
    overrides.push(`${key}.args=${tomlArray(server.args, 'args')}`);
    if (server.cwd !== undefined) overrides.push(`${key}.cwd=${tomlString(server.cwd, 'cwd')}`);
    const expanded = expandAll(server.env, input.env, 'env');
    secrets = expanded.secrets;
    // The entry's values travel in codex's environment and are forwarded by name: never on argv.
    Object.assign(env, expanded.values);
    const names = Object.keys(expanded.values);
    if (names.length > 0) overrides.push(`${key}.env_vars=${tomlArray(names, 'env_vars')}`);
    // The binding is no secret; it goes straight to the server, not into codex's own environment.
    const bound = Object.entries(binding);
    if (bound.length > 0) overrides.push(`${key}.env=${tomlTable(bound, 'env')}`);
  } else {
    overrides.push(`${key}.url=${tomlString(server.url, 'url')}`);
    const expanded = expandAll(server.headers, input.env, 'headers');
    secrets = expanded.secrets;
    const headers: [string, string][] = [];
    Object.entries(expanded.values).forEach(([name, value], i) => {
      const variable = `ZULIP_AGENT_HEADER_${i}`;
      env[variable] = value;
      headers.push([name, variable]);
    });
    if (headers.length > 0)
      overrides.push(`${key}.env_http_headers=${tomlTable(headers, 'env_http_headers')}`);
  }
  // codex exec asks before a tool the mode does not approve, and nobody answers: see codexApprovalProblem.
  overrides.push(
    `${key}.default_tools_approval_mode=${tomlString(input.codexToolApproval ?? 'approve', 'codexToolApproval')}`,
  );
  overrides.push(`developer_instructions=${tomlString(input.systemPrompt, 'system prompt')}`);
  return {
    command: 'codex',
    // "-" after "--": the prompt is read from stdin, verbatim, and no extra argument can take it.
    args: [
      'exec',
      ...overrides.flatMap((o) => ['-c', o]),
      ...(input.progress === true ? progressArgs('codex') : []),
      ...input.extraArgs,
      '--',
      '-',
    ],
    stdin: input.prompt,
    env,
    files: [],
    secrets,
  };
}

function opencode(input: InvocationInput): BackendInvocation {
  const { server, binding } = input;
  const instructions = join(input.runDir, 'instructions.md');
  let mcp: Record<string, unknown>;
  let secrets: string[];
  if (server.transport === 'stdio') {
    if (server.cwd !== undefined) {
      throw new LauncherError(
        'LAUNCHER_BACKEND_UNSUPPORTED',
        'OpenCode cannot start an MCP server in another directory: remove "cwd" from the zulip server entry, or use another backend.',
        { details: { backend: 'opencode', field: 'cwd' } },
      );
    }
    const expanded = expandAll(server.env, input.env, 'env');
    secrets = expanded.secrets;
    mcp = {
      type: 'local',
      command: [server.command, ...server.args],
      environment: { ...expanded.values, ...binding },
      enabled: true,
    };
  } else {
    const expanded = expandAll(server.headers, input.env, 'headers');
    secrets = expanded.secrets;
    mcp = { type: 'remote', url: server.url, headers: expanded.values, enabled: true };
  }
  const config = {
    $schema: 'https://opencode.ai/config.json',
    instructions: [instructions],
    mcp: { [SERVER_NAME]: mcp },
  };
  return {
    command: 'opencode',
    // The prompt on stdin: on the command line OpenCode quotes a message that holds a space and
    // escapes its quotes, and reads a leading "--" as an option; stdin reaches the model verbatim.
    args: ['run', ...(input.progress === true ? progressArgs('opencode') : []), ...input.extraArgs],
    stdin: input.prompt,
    // Inline configuration, in the environment: header and env values never reach argv.
    env: { OPENCODE_CONFIG_CONTENT: JSON.stringify(config) },
    files: [{ path: instructions, content: `${input.systemPrompt}\n` }],
    secrets,
  };
}

/**
 * Translates the zulip server of the user's `.mcp.json` into what `backend` reads, and builds
 * the command that starts one agent run: Claude Code gets a `.mcp.json` of its own (it expands
 * the references itself), Codex gets `-c mcp_servers...` overrides with every env and header
 * value forwarded from its environment by name, OpenCode gets inline JSON configuration in
 * `OPENCODE_CONFIG_CONTENT`. Secrets never reach the command line, and neither does the prompt:
 * each backend reads it from stdin (`stdin`), where it arrives verbatim.
 *
 * @throws LauncherError `LAUNCHER_MCP_CONFIG_INVALID` for a reference to an unset variable,
 *   `LAUNCHER_BACKEND_UNSUPPORTED` for an entry the backend cannot carry.
 */
export function buildInvocation(input: InvocationInput): BackendInvocation {
  if (input.server.transport === 'stdio') {
    const env = withoutBinding(input.server.env);
    input = { ...input, server: { ...input.server, env, raw: { ...input.server.raw, env } } };
  }
  switch (input.backend) {
    case 'claude':
      return claude(input);
    case 'codex':
      return codex(input);
    case 'opencode':
      return opencode(input);
  }
}
