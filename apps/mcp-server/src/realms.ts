import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseStreamAllowlist } from '@zmcp/core';
import { z } from 'zod';
import type { Config } from './config.js';
import { McpServerError } from './errors.js';

// Further realms a hosted server fronts (ZMCP_REALMS_FILE): each is a bot account on another Zulip
// organization, with its own credentials (a zuliprc), its own access policy and its own state (the
// state account is per realm and bot). Everything else is the server's shared configuration.

const RealmSpecSchema = z.strictObject({
  /** The zuliprc of the realm's bot; relative to the realms file. */
  zuliprc: z.string().min(1),
  /** As ZULIP_PRIVATE_STREAMS, for this realm. */
  privateStreams: z.string().optional(),
  /** As ZULIP_WRITE_STREAMS, for this realm. */
  writeStreams: z.string().optional(),
  /** As ZULIP_WRITE_DMS, for this realm. */
  writeDms: z.boolean().optional(),
});
type RealmSpec = z.infer<typeof RealmSpecSchema>;

const RealmsFileSchema = z.array(RealmSpecSchema).min(1).max(64);

/** The largest realms file read. */
const MAX_REALMS_FILE_BYTES = 64 * 1024;

/**
 * Reads the realms file: a JSON list of `{ "zuliprc", "privateStreams"?, "writeStreams"?,
 * "writeDms"? }`, and returns each realm's configuration: the server's, with that realm's bot
 * account and policy in place of the primary realm's.
 *
 * @throws McpServerError `MCP_CONFIG_INVALID` naming the file and what is wrong with it.
 */
export async function loadRealmConfigs(path: string, config: Config): Promise<Config[]> {
  const fail = (why: string, cause?: unknown): never => {
    throw new McpServerError('MCP_CONFIG_INVALID', `ZMCP_REALMS_FILE: ${path}: ${why}`, {
      cause,
      details: { problems: [`ZMCP_REALMS_FILE: ${path}: ${why}`] },
    });
  };
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    fail('cannot be read', err);
  }
  if (Buffer.byteLength(text) > MAX_REALMS_FILE_BYTES) fail(`is over ${MAX_REALMS_FILE_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    fail('is not JSON', err);
  }
  const parsed = RealmsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(
      `expected a list of { "zuliprc", "privateStreams"?, "writeStreams"?, "writeDms"? }: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
      parsed.error,
    );
  }
  const specs = parsed.data as RealmSpec[];
  return specs.map((spec, i) => {
    try {
      return {
        ...config,
        zulip: {
          site: undefined,
          email: undefined,
          apiKey: undefined,
          rcPath: resolve(dirname(path), spec.zuliprc),
          allowInsecureHttp: config.zulip.allowInsecureHttp,
        },
        privateStreams: parseStreamAllowlist(spec.privateStreams, `realm ${i + 1}'s privateStreams`),
        writeStreams: parseStreamAllowlist(spec.writeStreams, `realm ${i + 1}'s writeStreams`),
        writeDms: spec.writeDms,
        // Who may reach an agent is about the primary realm's people.
        admissionList: undefined,
      };
    } catch (err) {
      return fail(`realm ${i + 1}: ${err instanceof Error ? err.message : 'invalid'}`, err);
    }
  });
}
