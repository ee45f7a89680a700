import { parseSite } from '@zmcp/core';
import { UploadError } from './errors.js';

/**
 * The realm's URL as core's `parseSite` normalizes it (no trailing slash or `/api` suffix).
 * Whether plain http is acceptable was decided when the client was built, so it is not
 * judged again here.
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` for anything that is not an http(s) site URL.
 */
export function siteUrl(site: string | URL): URL {
  try {
    return new URL(`${parseSite(String(site), { allowInsecureHttp: true }).url}/`);
  } catch (cause) {
    throw new UploadError(
      'UPLOAD_CONFIG_INVALID',
      'site must be an http(s) URL such as https://acme.zulipchat.com',
      { cause, details: { option: 'site' } },
    );
  }
}
