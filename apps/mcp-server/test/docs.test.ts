// The settings are listed in four places: the schema, --help, .env.example and the
// README. They must name the same variables.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configMarkdownTable } from '../src/config.js';
import { configSettings, configVariableNames, helpText, legacySettings } from '../src/index.js';

const appDir = join(import.meta.dirname, '..');
const variablePattern = /\b(?:ZULIP|ZMCP|AGENT|SESSION)_[A-Z0-9_]+\b|\bTRIGGER_MESSAGE_ID\b/g;

function namesIn(text: string): string[] {
  return [...new Set(text.match(variablePattern) ?? [])].sort();
}

describe('configuration documentation', () => {
  const schemaNames = configVariableNames().sort();

  it('covers every variable the server is documented to read', () => {
    const documented = [
      'ZULIP_REALM',
      'ZULIP_SITE',
      'ZULIP_EMAIL',
      'ZULIP_API_KEY',
      'ZULIP_RC_PATH',
      'ZULIP_ALLOW_INSECURE_HTTP',
      'ZULIP_STATE_DIR',
      'ZULIP_STATE_URL',
      'ZULIP_SESSION_ID',
      'AGENT_TIMEZONE',
      'AGENT_TIMESTAMP_STYLE',
      'ZULIP_READ_ONLY',
      'ZULIP_TOOLSETS',
      'ZULIP_PRIVATE_STREAMS',
      'ZULIP_WRITE_STREAMS',
      'ZULIP_WRITE_DMS',
      'ZULIP_UPLOAD_ROOTS',
      'ZULIP_UPLOAD_MAX_BYTES',
      'ZULIP_MARKDOWN_AUTOFIX',
      'ZULIP_MAX_MESSAGE_LENGTH',
      'ZULIP_SEND_ONCE_WINDOW_MS',
      'ZULIP_PAGE_BUDGET_BYTES',
      'ZULIP_REQUEST_TIMEOUT_MS',
      'ZULIP_TOOL_DEADLINE_MS',
      'ZULIP_DISMISS_EMOJI',
      'ZULIP_LISTEN_EMOJI',
      'ZULIP_AUTO_TYPING',
      'ZULIP_INTERRUPT_FILE',
      'ZULIP_PERMISSION_PROMPT',
      'SESSION_STREAM',
      'SESSION_TOPIC',
      'TRIGGER_MESSAGE_ID',
      'ZMCP_LOG_LEVEL',
      'ZMCP_STATUS_PORT',
      'ZMCP_STATUS_HOST',
      'ZMCP_STATUS_TOKEN',
      'ZMCP_HTTP_HOST',
      'ZMCP_HTTP_PORT',
      'ZMCP_HTTP_TOKEN',
      'ZMCP_HTTP_ALLOWED_ORIGINS',
      'ZMCP_HTTP_MAX_SESSIONS',
      'ZMCP_HTTP_SESSION_IDLE_MS',
      'ZMCP_HTTP_AUTH',
      'ZULIP_SECRET_KEY',
      'ZMCP_ADMIN_TOKEN',
      'ZMCP_TOKEN_RATE_LIMIT',
      'ZMCP_TOKEN_MAX_WAITS',
      'ZMCP_TOKEN_IDLE_MS',
      'ZMCP_PUBLIC_URL',
      'ZMCP_TOKEN_HELP',
      'ZMCP_AUDIT_LOG',
      'ZMCP_AUDIT_MAX_BYTES',
      'ZMCP_REALMS_FILE',
      'ZULIP_CLAUDE_CHANNELS',
      'ZULIP_ALLOWED_USERS',
      'ZULIP_CHANNEL_PERMISSION_RELAY',
    ];
    expect(schemaNames).toEqual(documented.sort());
  });

  it('--help names exactly the schema’s variables and flags', () => {
    const help = helpText();
    // Earlier names are listed too, as what they are read as.
    const earlier = new Set(legacySettings().map((l) => l.name));
    expect(namesIn(help).filter((name) => !earlier.has(name))).toEqual(schemaNames);
    for (const setting of configSettings()) {
      if (setting.flag) expect(help).toContain(setting.flag);
      expect(help).toContain(setting.help);
    }
  });

  it('.env.example assigns exactly the schema’s variables, each once', () => {
    const example = readFileSync(join(appDir, '..', '..', '.env.example'), 'utf8');
    const assigned = [...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
    expect([...assigned].sort()).toEqual(schemaNames);
    expect(new Set(assigned).size).toBe(assigned.length);
  });

  it('the README carries the generated settings table', () => {
    const readme = readFileSync(join(appDir, 'README.md'), 'utf8');
    const start = readme.indexOf('<!-- settings:start -->');
    const end = readme.indexOf('<!-- settings:end -->');
    expect(start).toBeGreaterThan(0);
    const table = readme.slice(start + '<!-- settings:start -->'.length, end).trim();
    // Regenerate with: pnpm --filter @zmcp/mcp-server docs:settings
    expect(table).toBe(configMarkdownTable());
    expect(namesIn(table)).toEqual(schemaNames);
  });

  it('the README names every variable of earlier servers and what happens to it', () => {
    const readme = readFileSync(join(appDir, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Names from earlier servers'));
    for (const legacy of legacySettings()) {
      expect(section).toMatch(
        new RegExp(
          `\\| \`${legacy.name}\` \\|[^\\n]*\\|[^\\n]*${legacy.handling === 'alias' ? legacy.replacement : 'refused'}`,
        ),
      );
    }
  });
});
