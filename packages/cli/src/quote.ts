/**
 * A raw value as a configuration error may show it: JSON-quoted, cut to 60 characters, with
 * every given secret and the user-info part of any URL (`https://bot:key@...`) replaced by
 * `[REDACTED]`, since a secret may sit in the wrong variable.
 */
export function quoteForError(raw: string, secrets: readonly string[] = []): string {
  let shown = raw;
  for (const secret of secrets) if (secret.length > 0) shown = shown.split(secret).join('[REDACTED]');
  shown = shown.replace(/\/\/[^/@\s]*@/g, '//[REDACTED]@');
  if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
  return JSON.stringify(shown);
}
