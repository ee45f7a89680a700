import { escapeMsgAttr } from '@zmcp/core';

const brand = Symbol('zmcp.html');

/** A piece of HTML that is safe as it is: built by {@link html}, every interpolation escaped. */
export interface Html {
  readonly [brand]: true;
  readonly html: string;
}

function trusted(text: string): Html {
  return { [brand]: true, html: text };
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;
}

/**
 * Text as HTML text or a quoted attribute value: core's attribute escaping (`& < > "` as entities,
 * folded to one line without control characters, bidi controls or Unicode tag characters), then
 * `'` and `` ` `` too. Zulip names, topics and message text are hostile input: everything that
 * reaches the page goes through here.
 */
export function escapeHtml(text: string): string {
  return escapeMsgAttr(text).replace(/['`]/g, (c) => (c === "'" ? '&#39;' : '&#96;'));
}

/** What {@link html} interpolates: text (escaped), numbers, HTML built by it, lists of those; nothing for `undefined`, `null`, `false`. */
export type HtmlValue = Html | string | number | boolean | undefined | null | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false) return '';
  if (isHtml(value)) return value.html;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/**
 * A tagged template building {@link Html}: the template's own text is trusted, every interpolated
 * value is escaped (an {@link Html} value stays as it is). The only way panels make markup.
 *
 * @example
 * html`<td>${topic}</td>` // a topic named <img src=x> shows as text
 */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) out += render(values[i] as HtmlValue) + (strings[i + 1] as string);
  return trusted(out);
}

/** Joins pieces of {@link Html} (and escaped text) into one. */
export function joinHtml(parts: readonly HtmlValue[]): Html {
  return trusted(render(parts));
}
