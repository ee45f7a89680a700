import { isIP } from 'node:net';

/**
 * Tells whether a host name or address only reaches this machine: `localhost` and names under
 * `.localhost` (RFC 6761), IPv4 `127.0.0.0/8`, IPv6 `::1` and IPv4-mapped `::ffff:127.x.x.x`, in
 * any spelling (brackets, case, a trailing dot, `0:0:0:0:0:0:0:1`). A `host:port` is not a host:
 * pass the host alone. This is the one rule for every loopback check (plain-http sites, the HTTP
 * listener's token requirement, Host and Origin checks).
 */
export function isLoopbackHost(host: string): boolean {
  let bare = host.trim().toLowerCase();
  if (bare.startsWith('[') && bare.endsWith(']')) bare = bare.slice(1, -1);
  if (bare.endsWith('.')) bare = bare.slice(0, -1);
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  const kind = isIP(bare);
  if (kind === 4) return bare.startsWith('127.');
  if (kind !== 6) return false;
  // The URL parser writes IPv6 in its shortest form: ::1, and ::ffff:7f00:1 for ::ffff:127.0.0.1.
  const canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  return canonical === '::1' || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(canonical);
}
