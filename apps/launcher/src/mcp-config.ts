import { errorCode } from '@zmcp/core';
import { FileRefusedError, readBoundedFile } from '@zmcp/delivery';
import { z } from 'zod';
import { LauncherError } from './errors.js';

/** The zulip server of a `.mcp.json`, run as a local command that speaks MCP on stdio. */
export interface StdioServerEntry {
  transport: 'stdio';
  command: string;
  args: readonly string[];
  /** Values may be literals or references (`${VAR}`, `${VAR:-default}`, `$VAR`) to the launcher's environment. */
  env: Readonly<Record<string, string>>;
  cwd: string | undefined;
  /** The entry as written, for backends that read the `.mcp.json` format itself. */
  raw: Readonly<Record<string, unknown>>;
}

/** The zulip server of a `.mcp.json`, reached over Streamable HTTP. */
export interface HttpServerEntry {
  transport: 'http';
  url: string;
  /** Values may hold environment references, as in `env`. */
  headers: Readonly<Record<string, string>>;
  raw: Readonly<Record<string, unknown>>;
}

/** One server of a `.mcp.json`, validated. */
export type McpServerEntry = StdioServerEntry | HttpServerEntry;

const StringMap = z.record(z.string(), z.string());

const EntrySchema = z.looseObject({
  type: z.enum(['stdio', 'http', 'streamable-http', 'sse']).optional(),
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  env: StringMap.optional(),
  cwd: z.string().min(1).optional(),
  url: z.string().min(1).optional(),
  headers: StringMap.optional(),
});

const FileSchema = z.looseObject({ mcpServers: z.record(z.string(), z.unknown()) });

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// What a backend substitutes in its configuration, command and arguments included: `${VAR}` and
// `${VAR:-default}` (Claude Code's .mcp.json), `{env:VAR}` and `{file:path}` (OpenCode's
// configuration, OPENCODE_CONFIG_CONTENT too, checked with opencode 1.18.33), and `$VAR` (shells).
// Codex substitutes nothing in its TOML (values are literals; env values are forwarded by name).
const ENV_REFERENCE = /\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{(?:env|file):[^}]*\}/;

/**
 * True when `value` holds something a backend or a shell would replace with another value: an
 * environment reference, or OpenCode's `{file:path}` (the file's content).
 */
export function hasEnvReference(value: string): boolean {
  return ENV_REFERENCE.test(value);
}

function invalid(message: string, details: Record<string, unknown>): LauncherError {
  return new LauncherError('LAUNCHER_MCP_CONFIG_INVALID', message, { details });
}

function refuseReference(where: string, field: string, value: string): void {
  if (!hasEnvReference(value)) return;
  throw new LauncherError(
    'LAUNCHER_ENV_REFERENCE',
    `${where}: ${field} holds an environment reference or a file substitution; expanding it would put a value (perhaps a secret) on a command line. Move it into "env" (or "headers"), or write the value itself.`,
    { details: { field } },
  );
}

/**
 * Validates one server entry of a `.mcp.json` (the shape Claude Code, Cursor and others read):
 * a `command` with `args`, `env` and `cwd`, or a `url` with `headers`. An environment reference
 * or a file substitution (what any backend would expand: `${VAR}`, `$VAR`, `{env:VAR}`,
 * `{file:path}`) in the command, an argument, the cwd or the url fails closed.
 *
 * @throws LauncherError `LAUNCHER_MCP_CONFIG_INVALID` for a malformed entry,
 *   `LAUNCHER_ENV_REFERENCE` for a reference where it is not allowed.
 */
export function parseServerEntry(value: unknown, where = 'the zulip server entry'): McpServerEntry {
  const parsed = EntrySchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.map(String).join('.') ?? '';
    throw invalid(
      `${where} is malformed${path === '' ? '' : ` at "${path}"`}: ${issue?.message ?? 'invalid'}.`,
      {
        path,
      },
    );
  }
  const entry = parsed.data;
  const raw = value as Record<string, unknown>;
  for (const [field, map] of [
    ['env', entry.env],
    ['headers', entry.headers],
  ] as const) {
    for (const key of Object.keys(map ?? {})) {
      if (field === 'env' && !ENV_NAME.test(key)) {
        throw invalid(`${where}: env key ${JSON.stringify(key)} is not a variable name.`, {
          field: `env.${key}`,
        });
      }
      if (field === 'headers' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
        throw invalid(`${where}: header name ${JSON.stringify(key)} is not a valid HTTP header name.`, {
          field: `headers.${key}`,
        });
      }
    }
  }
  const http = entry.type === 'http' || entry.type === 'streamable-http' || entry.type === 'sse';
  if (http || (entry.command === undefined && entry.url !== undefined)) {
    if (entry.type === 'sse') {
      throw invalid(`${where}: the SSE transport is not supported; use "type": "http".`, { field: 'type' });
    }
    if (entry.url === undefined) throw invalid(`${where}: an HTTP server needs a "url".`, { field: 'url' });
    if (entry.command !== undefined) {
      throw invalid(`${where}: give a "command" or a "url", not both.`, { field: 'command' });
    }
    refuseReference(where, 'url', entry.url);
    let url: URL;
    try {
      url = new URL(entry.url);
    } catch {
      throw invalid(`${where}: "url" is not a URL.`, { field: 'url' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalid(`${where}: "url" must be http or https.`, { field: 'url' });
    }
    if (url.username !== '' || url.password !== '') {
      throw invalid(`${where}: "url" must not carry credentials; put them in "headers".`, { field: 'url' });
    }
    return { transport: 'http', url: entry.url, headers: { ...entry.headers }, raw };
  }
  if (entry.command === undefined) {
    throw invalid(`${where} needs a "command" (or a "url").`, { field: 'command' });
  }
  if (entry.url !== undefined)
    throw invalid(`${where}: give a "command" or a "url", not both.`, { field: 'url' });
  refuseReference(where, 'command', entry.command);
  (entry.args ?? []).forEach((arg, i) => {
    refuseReference(where, `args[${i}]`, arg);
  });
  if (entry.cwd !== undefined) refuseReference(where, 'cwd', entry.cwd);
  return {
    transport: 'stdio',
    command: entry.command,
    args: [...(entry.args ?? [])],
    env: { ...entry.env },
    cwd: entry.cwd,
    raw,
  };
}

/**
 * Picks server `name` out of a parsed `.mcp.json` document and validates it.
 *
 * @throws LauncherError `LAUNCHER_MCP_CONFIG_INVALID`, `LAUNCHER_ENV_REFERENCE`.
 */
export function selectServer(document: unknown, name: string, where = '.mcp.json'): McpServerEntry {
  const parsed = FileSchema.safeParse(document);
  if (!parsed.success) throw invalid(`${where} has no "mcpServers" object.`, { field: 'mcpServers' });
  const servers = parsed.data.mcpServers;
  if (!Object.hasOwn(servers, name)) {
    const known = Object.keys(servers);
    throw invalid(
      `${where} has no server named ${JSON.stringify(name)}${known.length > 0 ? ` (it has ${known.map((k) => JSON.stringify(k)).join(', ')})` : ''}.`,
      { server: name },
    );
  }
  return parseServerEntry(servers[name], `${where}: server ${JSON.stringify(name)}`);
}

/** The most a `.mcp.json` or a system prompt file may hold: they are settings, not data. */
export const MAX_SETTINGS_FILE_BYTES = 1024 * 1024;

/** Why a settings file could not be read, in words: refused as not regular or too large, or the open's error code. */
export function whyUnreadable(err: unknown): string {
  if (err instanceof FileRefusedError) return err.message;
  return errorCode(err) ?? 'read failed';
}

/**
 * Reads a `.mcp.json` file and returns its server `name`, validated.
 *
 * @throws LauncherError `LAUNCHER_MCP_CONFIG_INVALID` (unreadable, not JSON, no such server, malformed),
 *   `LAUNCHER_ENV_REFERENCE`.
 */
export async function loadServerEntry(path: string, name: string): Promise<McpServerEntry> {
  let text: string;
  try {
    text = Buffer.from(await readBoundedFile(path, MAX_SETTINGS_FILE_BYTES)).toString('utf8');
  } catch (err) {
    throw new LauncherError('LAUNCHER_MCP_CONFIG_INVALID', `cannot read ${path}: ${whyUnreadable(err)}.`, {
      cause: err,
      details: { file: path },
    });
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (err) {
    throw new LauncherError('LAUNCHER_MCP_CONFIG_INVALID', `${path} is not valid JSON.`, {
      cause: err,
      details: { file: path },
    });
  }
  return selectServer(document, name, path);
}

// `${VAR}`, `${VAR:-default}` or `$VAR`, as Claude Code expands them in env and header values.
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/** The names of the variables a value refers to. */
export function referencedVariables(value: string): string[] {
  return [...value.matchAll(REFERENCE)].map((m) => (m[1] ?? m[3]) as string);
}

/**
 * Expands the environment references of an env or header value against `env`, as Claude Code
 * does: `${VAR}`, `${VAR:-default}` and `$VAR`. A variable that is unset (and has no default)
 * fails closed rather than expanding to nothing.
 *
 * @throws LauncherError `LAUNCHER_MCP_CONFIG_INVALID` naming the variable (never a value).
 */
export function expandReferences(
  value: string,
  env: Readonly<Record<string, string | undefined>>,
  field: string,
): string {
  return value.replace(
    REFERENCE,
    (_match, braced: string | undefined, fallback: string | undefined, bare) => {
      const name = (braced ?? bare) as string;
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      throw new LauncherError(
        'LAUNCHER_MCP_CONFIG_INVALID',
        `${field} refers to $${name}, which is not set in the launcher's environment.`,
        { details: { field, variable: name } },
      );
    },
  );
}
