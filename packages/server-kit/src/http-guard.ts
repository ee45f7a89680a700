import { createHash, timingSafeEqual } from 'node:crypto';
import { isLoopbackHost } from '@zmcp/core';

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * A check of a presented secret against `token` in constant time: both sides are hashed first, so
 * the comparison neither stops at the first differing byte nor tells the token's length.
 */
export function tokenCheck(token: string): (presented: string) => boolean {
  const expected = digest(token);
  return (presented) => timingSafeEqual(digest(presented), expected);
}

/** The token of an `Authorization: Bearer <token>` header, or `undefined` for any other header. */
export function bearerTokenOf(authorization: string | null | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return match === null ? undefined : (match[1] as string);
}

/**
 * The host name of a `Host` header, or `undefined` when it is anything but a host and a port (no
 * user info, path or anything else a URL parser would read past).
 */
export function hostnameOfHostHeader(hostHeader: string | null | undefined): string | undefined {
  if (hostHeader == null || !/^[A-Za-z0-9.:[\]-]+$/.test(hostHeader)) return undefined;
  try {
    return new URL(`http://${hostHeader}/`).hostname;
  } catch {
    return undefined;
  }
}

/** Whether a `Host` header names a loopback host: a server bound to loopback refuses others (DNS rebinding). */
export function isLoopbackHostHeader(hostHeader: string | null | undefined): boolean {
  const hostname = hostnameOfHostHeader(hostHeader);
  return hostname !== undefined && isLoopbackHost(hostname);
}
