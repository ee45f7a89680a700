import { ZmcpError } from '../errors.js';
import { isLoopbackHost } from './loopback.js';

/** A validated Zulip site: where the realm lives and how its API is addressed. */
export interface ZulipSite {
  /** The normalized site URL, without a trailing slash or `/api` suffix: `https://acme.zulipchat.com`. */
  readonly url: string;
  /** Scheme, host and port: `https://acme.zulipchat.com`. */
  readonly origin: string;
  /** Path prefix the realm is served under, `''` for the root. */
  readonly basePath: string;
}

/** Options for {@link parseSite}. */
export interface ParseSiteOptions {
  /** Accept `http://` to hosts other than loopback. Off by default: the API key travels in every request. */
  allowInsecureHttp?: boolean | undefined;
}

/**
 * Validates and normalizes a Zulip site URL: https, or http only to loopback unless
 * `allowInsecureHttp` is set; no credentials, query or fragment; a trailing `/api` or
 * `/api/v1` is dropped, as the official clients do.
 *
 * @throws {ZmcpError} `CORE_INSECURE_URL` when the URL is not acceptable.
 */
export function parseSite(site: string, options: ParseSiteOptions = {}): ZulipSite {
  let url: URL;
  try {
    url = new URL(site.trim());
  } catch (cause) {
    throw new ZmcpError('CORE_INSECURE_URL', `The Zulip site is not a valid URL: ${JSON.stringify(site)}`, {
      cause,
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ZmcpError(
      'CORE_INSECURE_URL',
      `The Zulip site must use https (got ${url.protocol.replace(/:$/, '')}): ${url.host}`,
    );
  }
  if (url.protocol === 'http:' && !options.allowInsecureHttp && !isLoopbackHost(url.hostname)) {
    throw new ZmcpError(
      'CORE_INSECURE_URL',
      `The Zulip site ${url.host} uses plain http, which would send the API key unencrypted; use https, or allow insecure http explicitly`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new ZmcpError('CORE_INSECURE_URL', 'The Zulip site URL must not contain a user name or password');
  }
  if (url.search !== '' || url.hash !== '') {
    throw new ZmcpError(
      'CORE_INSECURE_URL',
      `The Zulip site URL must not have a query or fragment: ${url.host}`,
    );
  }
  let basePath = url.pathname.replace(/\/+$/, '');
  basePath = basePath.replace(/\/api(\/v1)?$/, '');
  return { url: `${url.origin}${basePath}`, origin: url.origin, basePath };
}
