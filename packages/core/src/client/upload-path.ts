import { ZmcpError } from '../errors.js';
import type { ZulipSite } from './site.js';

/** A realm upload location that passed validation. */
export interface UploadLocation {
  /** The absolute URL on the realm. */
  url: URL;
  /** The path after `/user_uploads/`: `2/7c/Jd9sK2qWmZ3x/report.pdf`. */
  relative: string;
}

function invalid(message: string, input: string): ZmcpError {
  return new ZmcpError('CORE_INVALID_ARGUMENT', message, {
    details: { path: input.length > 200 ? `${input.slice(0, 200)}...` : input },
  });
}

/**
 * Resolves a `/user_uploads/...` path, or an absolute URL of one, against the realm, refusing
 * other hosts, anything outside `/user_uploads/`, dot segments (plain or percent-encoded),
 * backslashes, control characters, queries and fragments.
 *
 * @throws {ZmcpError} `CORE_INVALID_ARGUMENT` naming what was wrong.
 */
export function resolveUploadLocation(input: string, site: ZulipSite): UploadLocation {
  if (input.length === 0 || input.length > 2048 || /[\u0000-\u001f\u007f\\]/.test(input)) {
    throw invalid('The upload path is empty, too long, or contains a backslash or control character', input);
  }
  let url: URL;
  try {
    url = /^[a-z][a-z0-9+.-]*:/i.test(input)
      ? new URL(input)
      : new URL(`${site.url}/${input.replace(/^\/+/, '')}`);
  } catch (cause) {
    throw new ZmcpError('CORE_INVALID_ARGUMENT', 'The upload path is not a valid URL or path', {
      cause,
      details: { path: input.slice(0, 200) },
    });
  }
  if (url.origin !== site.origin) {
    throw invalid(`Uploads are fetched only from the realm (${site.origin}), not from ${url.origin}`, input);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw invalid('The upload path must not carry a query, fragment or credentials', input);
  }
  // URL parsing already folded `..`; look at what was written, segment by segment, decoded.
  const rawPath = input.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').split(/[?#]/)[0] ?? '';
  for (const segment of rawPath.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw invalid('The upload path has a malformed percent-escape', input);
    }
    if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) {
      throw invalid('The upload path must not contain dot segments or encoded slashes', input);
    }
  }
  const prefix = `${site.basePath}/user_uploads/`;
  if (!url.pathname.startsWith(prefix) || url.pathname.length === prefix.length) {
    throw invalid('The upload path must be a /user_uploads/... path of this realm', input);
  }
  return { url, relative: url.pathname.slice(prefix.length) };
}
