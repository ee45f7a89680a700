import { UploadError } from './errors.js';

/**
 * The realm's URL, checked to be http(s).
 *
 * @throws {UploadError} `UPLOAD_CONFIG_INVALID` for anything else.
 */
export function siteUrl(site: string | URL): URL {
  try {
    const url = new URL(site);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url;
  } catch {
    // reported below
  }
  throw new UploadError(
    'UPLOAD_CONFIG_INVALID',
    'site must be an http(s) URL such as https://acme.zulipchat.com',
    {
      details: { option: 'site' },
    },
  );
}
