import { unicodeEmojiCode, ZULIP_EXTRA_EMOJI } from './emoji.js';

/** What the renderer needs to know about the realm. */
export interface RenderContext {
  /** A user by full name (case-insensitive) and optional id; `undefined` if unknown or ambiguous. */
  user(name: string, id: number | undefined): { id: number; fullName: string } | undefined;
  /** A stream by name (case-insensitive). */
  stream(name: string): { id: number; name: string } | undefined;
  /** An active realm emoji by name. */
  realmEmoji(name: string): { id: string; url: string } | undefined;
}

/** The rendered HTML and the facts Zulip derives from rendering. */
export interface RenderResult {
  html: string;
  /** Users mentioned by a notifying mention (`@**Name**`), not silent ones. */
  mentionedUserIds: number[];
  streamWildcard: boolean;
  topicWildcard: boolean;
  hasLink: boolean;
  hasImage: boolean;
  /** Path ids (`2/ab/xyz/file.png`) of `/user_uploads/` links. */
  uploadPaths: string[];
  isMeMessage: boolean;
}

const IMAGE_EXTENSIONS = /\.(?:png|jpe?g|gif|webp|bmp|tiff?)$/i;
const STREAM_WILDCARDS = new Set(['all', 'everyone', 'channel', 'stream']);

interface State {
  ctx: RenderContext;
  mentioned: Set<number>;
  streamWildcard: boolean;
  topicWildcard: boolean;
  hasLink: boolean;
  hasImage: boolean;
  uploads: Set<string>;
  previews: string[];
}

/** Escapes text for HTML element content. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttr(text: string): string {
  return escapeHtml(text).replace(/"/g, '&quot;');
}

/**
 * Renders Zulip-flavoured Markdown to the HTML Zulip would store: paragraphs with `<br>`
 * line breaks, emphasis, strong, strikethrough, inline and fenced code, links and autolinks,
 * quotes (whose mentions are silenced), lists, headings, user/wildcard/silent mentions,
 * stream links, emoji, and image previews for image links.
 */
export function renderMarkdown(content: string, ctx: RenderContext): RenderResult {
  const st: State = {
    ctx,
    mentioned: new Set(),
    streamWildcard: false,
    topicWildcard: false,
    hasLink: false,
    hasImage: false,
    uploads: new Set(),
    previews: [],
  };
  const lines = content
    .replace(/\r\n?/g, '\n')
    .replace(/\u0000/g, '')
    .split('\n');
  const html = renderBlocks(lines, st, false).join('\n');
  return {
    html,
    mentionedUserIds: [...st.mentioned],
    streamWildcard: st.streamWildcard,
    topicWildcard: st.topicWildcard,
    hasLink: st.hasLink,
    hasImage: st.hasImage,
    uploadPaths: [...st.uploads],
    isMeMessage: content.startsWith('/me ') && !content.includes('\n'),
  };
}

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const LIST_ITEM = /^( {0,3})([*+-]|\d{1,9}[.)])[ \t]+(.*)$/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;

function startsBlock(line: string): boolean {
  return (
    FENCE.test(line) || QUOTE.test(line) || LIST_ITEM.test(line) || HEADING.test(line) || RULE.test(line)
  );
}

function renderBlocks(lines: string[], st: State, silent: boolean): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1] as string;
      const lang = fence[2] ?? '';
      const body: string[] = [];
      i++;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i] as string);
        if (close && (close[1] as string)[0] === marker[0] && (close[1] as string).length >= marker.length)
          break;
        body.push(lines[i] as string);
        i++;
      }
      i++;
      if (lang === 'quote') {
        out.push(`<blockquote>\n${renderBlocks(body, st, true).join('\n')}\n</blockquote>`);
      } else {
        const language = lang ? ` data-code-language="${escapeAttr(lang)}"` : '';
        const code = body.length > 0 ? `${escapeHtml(body.join('\n'))}\n` : '';
        out.push(`<div class="codehilite"${language}><pre><span></span><code>${code}</code></pre></div>`);
      }
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length) {
        const m = QUOTE.exec(lines[i] as string);
        if (!m) break;
        body.push(m[1] as string);
        i++;
      }
      out.push(`<blockquote>\n${renderBlocks(body, st, true).join('\n')}\n</blockquote>`);
      continue;
    }
    if (RULE.test(line)) {
      out.push('<hr>');
      i++;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = (heading[1] as string).length;
      out.push(`<h${level}>${inline(heading[2] as string, st, silent, false)}</h${level}>`);
      i++;
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      i = renderList(lines, i, st, silent, out);
      continue;
    }
    const para: string[] = [];
    while (i < lines.length) {
      const l = lines[i] as string;
      if (l.trim() === '' || (para.length > 0 && startsBlock(l))) break;
      para.push(l);
      i++;
    }
    st.previews = [];
    const text = para.map((l) => inline(l.trim(), st, silent, false)).join('<br>\n');
    out.push(`<p>${text}</p>`);
    for (const preview of st.previews) out.push(preview);
    st.previews = [];
  }
  return out;
}

function renderList(lines: string[], start: number, st: State, silent: boolean, out: string[]): number {
  const first = LIST_ITEM.exec(lines[start] as string) as RegExpExecArray;
  const ordered = /\d/.test(first[2] as string);
  const indent = (first[1] as string).length;
  const items: string[][] = [];
  let i = start;
  while (i < lines.length) {
    const l = lines[i] as string;
    const m = LIST_ITEM.exec(l);
    if (m && (m[1] as string).length === indent && /\d/.test(m[2] as string) === ordered) {
      items.push([m[3] as string]);
      i++;
      continue;
    }
    const current = items[items.length - 1];
    if (current && l.trim() !== '' && /^\s{2,}/.test(l)) {
      current.push(l.replace(/^\s{2,4}/, ''));
      i++;
      continue;
    }
    break;
  }
  const tag = ordered ? 'ol' : 'ul';
  const startNumber = ordered ? Number.parseInt(first[2] as string, 10) : 1;
  const open = ordered && startNumber !== 1 ? `<ol start="${startNumber}">` : `<${tag}>`;
  const rendered = items.map((parts) => {
    const [head, ...rest] = parts;
    let html = inline((head as string).trim(), st, silent, false);
    if (rest.length > 0) html += `\n${renderBlocks(rest, st, silent).join('\n')}\n`;
    return `<li>${html}</li>`;
  });
  out.push(`${open}\n${rendered.join('\n')}\n</${tag}>`);
  return i;
}

function slug(name: string): string {
  return encodeURIComponent(name.replace(/ /g, '-')).replace(/%/g, '.');
}

function trimUrl(url: string): string {
  let end = url.length;
  while (end > 0 && /[.,:;!?'"]/.test(url[end - 1] as string)) end--;
  let trimmed = url.slice(0, end);
  while (trimmed.endsWith(')')) {
    const opens = trimmed.split('(').length - 1;
    const closes = trimmed.split(')').length - 1;
    if (closes <= opens) break;
    trimmed = trimmed.slice(0, -1);
  }
  return trimmed;
}

function isAllowedUrl(url: string): boolean {
  return /^(?:https?:\/\/|mailto:)/i.test(url) || (url.startsWith('/') && !url.startsWith('//'));
}

/** Records a link and, for image links, queues an inline preview after the paragraph. */
function noteLink(url: string, title: string, st: State): void {
  st.hasLink = true;
  const upload = /^\/user_uploads\/(\d+\/[^?#]+)/.exec(url);
  if (upload) st.uploads.add(decodeURIComponent(upload[1] as string));
  const isImage = IMAGE_EXTENSIONS.test(url.replace(/[?#].*$/, ''));
  if (isImage && (upload || /^https?:\/\//i.test(url))) {
    st.hasImage = true;
    st.previews.push(
      `<div class="message_inline_image"><a href="${escapeAttr(url)}" title="${escapeAttr(title)}"><img src="${escapeAttr(url)}"></a></div>`,
    );
  }
}

function inline(text: string, st: State, silent: boolean, inLink: boolean): string {
  const slots: string[] = [];
  const slot = (html: string): string => {
    slots.push(html);
    return `\u0000${slots.length - 1}\u0000`;
  };

  let s = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_m, _ticks: string, code: string) =>
    slot(`<code>${escapeHtml(code.replace(/^ (.*) $/, '$1'))}</code>`),
  );
  s = s.replace(/\\([\\`*_{}[\]()#+\-.!>~@|:])/g, (_m, ch: string) => slot(escapeHtml(ch)));

  s = s.replace(/@(_?)\*\*([^*\n]+?)\*\*/g, (whole, underscore: string, body: string) => {
    const quiet = silent || underscore === '_';
    const bar = body.lastIndexOf('|');
    const name = bar >= 0 ? body.slice(0, bar) : body;
    const idText = bar >= 0 ? body.slice(bar + 1) : '';
    const id = /^\d+$/.test(idText) ? Number(idText) : undefined;
    if (bar < 0 && STREAM_WILDCARDS.has(name.toLowerCase())) {
      if (!quiet) st.streamWildcard = true;
      const cls = quiet
        ? 'user-mention channel-wildcard-mention silent'
        : 'user-mention channel-wildcard-mention';
      return slot(`<span class="${cls}" data-user-id="*">${quiet ? '' : '@'}${escapeHtml(name)}</span>`);
    }
    if (bar < 0 && name.toLowerCase() === 'topic') {
      if (!quiet) st.topicWildcard = true;
      return slot(
        `<span class="topic-mention${quiet ? ' silent' : ''}">${quiet ? '' : '@'}${escapeHtml(name)}</span>`,
      );
    }
    if (bar >= 0 && id === undefined) return slot(escapeHtml(whole));
    const user = st.ctx.user(name, id);
    if (!user) return slot(escapeHtml(whole));
    if (quiet) {
      return slot(
        `<span class="user-mention silent" data-user-id="${user.id}">${escapeHtml(user.fullName)}</span>`,
      );
    }
    st.mentioned.add(user.id);
    return slot(`<span class="user-mention" data-user-id="${user.id}">@${escapeHtml(user.fullName)}</span>`);
  });

  s = s.replace(/#\*\*([^*\n]+?)\*\*/g, (whole, body: string) => {
    const gt = body.indexOf('>');
    const streamName = gt >= 0 ? body.slice(0, gt) : body;
    const stream = st.ctx.stream(streamName);
    if (!stream) return slot(escapeHtml(whole));
    const href = `/#narrow/channel/${stream.id}-${slug(stream.name)}`;
    if (gt < 0) {
      return slot(
        `<a class="stream" data-stream-id="${stream.id}" href="${escapeAttr(href)}">#${escapeHtml(stream.name)}</a>`,
      );
    }
    const topic = body.slice(gt + 1);
    return slot(
      `<a class="stream-topic" data-stream-id="${stream.id}" href="${escapeAttr(`${href}/topic/${slug(topic)}`)}">#${escapeHtml(stream.name)} &gt; ${escapeHtml(topic)}</a>`,
    );
  });

  if (!inLink) {
    s = s.replace(
      /\[([^\]\n]+)\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g,
      (whole, label: string, url: string) => {
        if (!isAllowedUrl(url)) return whole;
        noteLink(url, label, st);
        return slot(`<a href="${escapeAttr(url)}">${inline(label, st, silent, true)}</a>`);
      },
    );
    s = s.replace(/(^|[\s(<\u0000])(https?:\/\/[^\s<>"\u0000]+)/gi, (whole, lead: string, raw: string) => {
      const url = trimUrl(raw);
      if (url.length <= 'https://'.length) return whole;
      noteLink(url, url, st);
      return `${lead}${slot(`<a href="${escapeAttr(url)}">${escapeHtml(url)}</a>`)}${raw.slice(url.length)}`;
    });
  }

  s = escapeHtml(s);
  s = s.replace(/\*\*(?=\S)([^\n]*?\S)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![*\w])/g, '$1<em>$2</em>');
  s = s.replace(/~~(?=\S)([^\n]*?\S)~~/g, '<del>$1</del>');
  s = s.replace(/:([a-z0-9_+-]+):/g, (whole, name: string) => {
    const realm = st.ctx.realmEmoji(name);
    if (realm) {
      return slot(
        `<img alt=":${name}:" class="emoji" src="${escapeAttr(realm.url)}" title="${name.replace(/_/g, ' ')}">`,
      );
    }
    if (name === ZULIP_EXTRA_EMOJI) {
      return slot(
        '<img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip">',
      );
    }
    const code = unicodeEmojiCode(name);
    if (!code) return whole;
    const title = name.replace(/_/g, ' ');
    return slot(
      `<span aria-label="${title}" class="emoji emoji-${code}" role="img" title="${title}">:${name}:</span>`,
    );
  });

  while (s.includes('\u0000')) s = s.replace(/\u0000(\d+)\u0000/g, (_m, n: string) => slots[Number(n)] ?? '');
  return s;
}
