/** Request parameters before encoding; `undefined` values are left out. */
export type RequestParams = Readonly<Record<string, unknown>>;

/**
 * Encodes parameters the way Zulip reads them: strings as they are, every other value
 * (numbers, booleans, lists, objects) JSON-encoded inside the field.
 */
export function encodeParams(params: RequestParams | undefined): string {
  if (params === undefined) return '';
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    search.append(key, typeof value === 'string' ? value : JSON.stringify(value));
  }
  return search.toString();
}
