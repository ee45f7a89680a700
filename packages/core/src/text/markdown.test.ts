import { describe, expect, it } from 'vitest';
import { normalizeMarkdown } from './markdown.js';

describe('normalizeMarkdown: blank line before tables', () => {
  it.each([
    [
      'a table right under a paragraph line',
      'Results:\n| a | b |\n|---|---|\n| 1 | 2 |',
      'Results:\n\n| a | b |\n|---|---|\n| 1 | 2 |',
    ],
    ['aligned separator without outer pipes', 'x\na | b\n:-- | --:\n1 | 2', 'x\n\na | b\n:-- | --:\n1 | 2'],
    ['a single bordered column', 'x\n| a |\n|---|', 'x\n\n| a |\n|---|'],
    ['a table under a list item', '- item\n| a | b |\n| - | - |', '- item\n\n| a | b |\n| - | - |'],
    [
      'inside a blockquote, with a bare > line',
      '> quote\n> | a | b |\n> |---|---|',
      '> quote\n>\n> | a | b |\n> |---|---|',
    ],
    ['nested blockquote', '> > q\n> > | a | b |\n> > |---|---|', '> > q\n> >\n> > | a | b |\n> > |---|---|'],
    ['CRLF line endings', 'x\r\n| a | b |\r\n|---|---|\r\n', 'x\r\n\r\n| a | b |\r\n|---|---|\r\n'],
    [
      'inside a quote fence (Markdown content)',
      '```quote\nx\n| a | b |\n|---|---|\n```',
      '```quote\nx\n\n| a | b |\n|---|---|\n```',
    ],
  ])('inserts one for %s', (_name, input, expected) => {
    expect(normalizeMarkdown(input)).toBe(expected);
  });

  it.each([
    ['already separated', 'x\n\n| a | b |\n|---|---|'],
    ['a table at the start', '| a | b |\n|---|---|\n| 1 | 2 |'],
    ['a table right after a fence line', '```\ncode\n```\n| a | b |\n|---|---|'],
    ['a pipe in prose', 'use a | b here\nand more'],
    ['a setext heading whose text has a pipe', 'x\na | b\n---'],
    ['a separator with a different cell count', 'x\n| a | b | c |\n|---|---|'],
    ['an unbordered single column', 'x\na\n---'],
    ['pipes inside a code span do not make cells', 'x\n`a | b`\n|---|---|'],
    ['a table in a backtick fence', '```\nSome text\n| h1 | h2 |\n| --- | --- |\n```'],
    ['a table in a tilde fence', '~~~\nSome text\n| h1 | h2 |\n| --- | --- |\n~~~'],
    ['a table in a fence with a language', '```python\ndata\n| h1 | h2 |\n| --- | --- |\n```'],
    ['a table in indented code', 'x\n    | a | b |\n    |---|---|'],
    ['quote depths that differ', 'x\n> | a | b |\n> |---|---|'],
    ['a separator without dashes', 'x\n| a | b |\n| : | : |'],
  ])('leaves %s alone', (_name, input) => {
    expect(normalizeMarkdown(input)).toBe(input);
  });
});

describe('normalizeMarkdown: emphasis inside link text', () => {
  it.each([
    [
      'bold wrapping the whole text moves out',
      '[**Docs**](https://x.example)',
      '**[Docs](https://x.example)**',
    ],
    ['italic wrapping the whole text moves out', '[*Docs*](u)', '*[Docs](u)*'],
    ['bold italic moves out', '[***Docs***](u)', '***[Docs](u)***'],
    ['partial bold is removed', '[the **new** docs](u)', '[the new docs](u)'],
    ['two bold parts are removed', '[**a** and **b**](u)', '[a and b](u)'],
    ['whole bold with inner italic: bold out, italic removed', '[**a *b* c**](u)', '**[a b c](u)**'],
    ['mismatched runs are all removed', '[*a **b* c**](u)', '[a b c](u)'],
    ['already inside bold: removed instead', '**see [**this**](u)**', '**see [this](u)**'],
    ['after an odd asterisk: removed instead', '*see [**this**](u)', '*see [this](u)'],
    ['touching an asterisk: removed instead', '[**a**](u)**', '[a](u)**'],
    ['adjacent links: the second cannot wrap', '[**a**](u)[**b**](v)', '**[a](u)**[b](v)'],
    ['balanced bold elsewhere on the line', '**x** then [**y**](u)', '**x** then **[y](u)**'],
    [
      'destination with parentheses kept',
      '[**Foo**](https://en.wikipedia.org/wiki/Foo_(bar))',
      '**[Foo](https://en.wikipedia.org/wiki/Foo_(bar))**',
    ],
    ['destination with a title kept', '[**a**](u "t")', '**[a](u "t")**'],
    ['a link inside a table cell', '| [**a**](u) | b |', '| **[a](u)** | b |'],
  ])('%s', (_name, input, expected) => {
    expect(normalizeMarkdown(input)).toBe(expected);
  });

  it.each([
    ['the working form', '**[Docs](https://x.example)**'],
    ['a spaced asterisk', '[5 * 3](u)'],
    ['an unpaired asterisk between letters', '[a*b](u)'],
    ['an escaped asterisk', '[\\*\\*a\\*\\*](u)'],
    ['asterisks in a code span in the link text', '[`**a**`](u)'],
    ['an image alt text', '![**alt**](/user_uploads/1/a.png)'],
    ['a link inside an inline code span', '`[**a**](u)`'],
    ['a link inside a double-backtick code span', '``x [**a**](u) ` y``'],
    ['brackets without a destination', '[**a**] (u)'],
    ['an escaped bracket', '\\[**a**](u)'],
  ])('leaves %s alone', (_name, input) => {
    expect(normalizeMarkdown(input)).toBe(input);
  });
});

describe('normalizeMarkdown: bare URLs touching asterisks', () => {
  it.each([
    ['a bold URL', '**https://x.example/a**', '**[https://x.example/a](https://x.example/a)**'],
    ['a bold URL without a path', '**https://x.example**', '**[https://x.example](https://x.example)**'],
    ['an italic URL', '*https://x.example*', '*[https://x.example](https://x.example)*'],
    [
      'a URL followed by ** after a space-led start',
      'see https://x.example/a** ok',
      'see [https://x.example/a](https://x.example/a)** ok',
    ],
    [
      'sentence punctuation stays outside',
      '**docs: https://x.example/a.**',
      '**docs: [https://x.example/a](https://x.example/a).**',
    ],
    [
      'an unbalanced closing paren stays outside',
      '**(https://x.example/a)**',
      '**([https://x.example/a](https://x.example/a))**',
    ],
  ])('%s', (_name, input, expected) => {
    expect(normalizeMarkdown(input)).toBe(expected);
  });

  it.each([
    ['a plain URL', 'see https://x.example/a ok'],
    ['a URL with a trailing single asterisk (a glob)', 'files at https://x.example/*'],
    ['a URL already a link', '**[https://x.example](https://x.example)**'],
    ['an autolink', '**<https://x.example>**'],
    ['a URL in code', '`**https://x.example**`'],
  ])('leaves %s alone', (_name, input) => {
    expect(normalizeMarkdown(input)).toBe(input);
  });
});

describe('normalizeMarkdown: code is exempt', () => {
  it.each([
    ['a backtick fence', '```\n[**a**](u)\n**https://x.example**\nx\n| a | b |\n|---|---|\n```'],
    ['a tilde fence', '~~~\n[**a**](u)\n~~~'],
    ['a longer fence holding shorter fences', '````\n```\n[**a**](u)\n```\n````'],
    ['a fence closed only by the identical fence', '```\ncode\n````\n[**a**](u)\n```'],
    ['a fence with text after the closer is not closed', '```\n``` not a closer\n[**a**](u)\n```'],
    ['an unclosed fence runs to the end', 'x\n```js\n[**a**](u)\n| a | b |\n|---|---|'],
    ['math is raw', '```math\n[**a**](u)\n```'],
    ['indented code', '    [**a**](u)\n\t**https://x.example**'],
  ])('%s', (_name, input) => {
    expect(normalizeMarkdown(input)).toBe(input);
  });

  it('fixes text after a fence closes, and Markdown inside quote/spoiler blocks', () => {
    expect(normalizeMarkdown('```\n[**a**](u)\n```\n[**a**](u)')).toBe('```\n[**a**](u)\n```\n**[a](u)**');
    expect(normalizeMarkdown('```spoiler Title\n[**a**](u)\n```')).toBe('```spoiler Title\n**[a](u)**\n```');
  });

  it('keeps code nested in a quote block raw', () => {
    const input = '````quote\n```\n[**a**](u)\n```\n[**b**](v)\n````';
    expect(normalizeMarkdown(input)).toBe('````quote\n```\n[**a**](u)\n```\n**[b](v)**\n````');
  });

  it('closes a quote block at its own fence first, as Zulip does', () => {
    // The second ``` closes the quote, so the next line is text and the fence after it opens code.
    const input = '```quote\n```\n[**a**](u)\n```\n[**b**](v)\n```';
    expect(normalizeMarkdown(input)).toBe('```quote\n```\n**[a](u)**\n```\n[**b**](v)\n```');
  });

  it('treats an indented fence as text (Zulip fences start in column 0)', () => {
    expect(normalizeMarkdown(' ```\n[**a**](u)')).toBe(' ```\n**[a](u)**');
  });
});

describe('normalizeMarkdown: switches', () => {
  it('returns the text unchanged when disabled', () => {
    const input = 'x\n| a | b |\n|---|---|\n[**a**](u)';
    expect(normalizeMarkdown(input, { enabled: false })).toBe(input);
    expect(normalizeMarkdown(input, { enabled: true })).not.toBe(input);
  });

  it('returns text without pipes or asterisks as is', () => {
    const input = 'plain [link](u) and `code`';
    expect(normalizeMarkdown(input)).toBe(input);
  });
});

// A seeded generator of adversarial Markdown for the idempotence property.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  '**',
  '*',
  '***',
  '[',
  ']',
  '(',
  ')',
  '`',
  '``',
  '```',
  '````',
  '~~~',
  '```quote',
  '```math',
  '|',
  '---',
  '|---|---|',
  '| a | b |',
  '\n',
  '\n',
  '\n',
  '\n\n',
  ' ',
  ' ',
  'text',
  'word',
  'https://x.example/a',
  'https://x.example',
  '[**b**](u)',
  '[*i*](v)',
  '[a **b** c](w)',
  '![**i**](p)',
  '<https://x.example>',
  '> ',
  '>',
  '    ',
  '\t',
  '\\*',
  '\\[',
  '\\`',
  '_',
  ':',
  '.',
  '\r\n',
  'ü',
  '😀',
  '**[a](u)**',
  '](',
  '[x](y)',
  '`**`',
  '!',
  '"',
  "'",
  '\\',
  'http://',
  '(u)',
];

function corpus(count: number): string[] {
  const next = rng(0xc0ffee);
  const out: string[] = [];
  for (let n = 0; n < count; n++) {
    const parts = 1 + Math.floor(next() * 40);
    let s = '';
    for (let i = 0; i < parts; i++) s += FRAGMENTS[Math.floor(next() * FRAGMENTS.length)];
    out.push(s);
  }
  return out;
}

const HAND_PICKED = [
  '[**a**](u)[**b**](v)[**c**](w)',
  '**a [**b**](u) c**',
  '[**a*b**](u)',
  '[***](u)',
  '[** a **](u)',
  '*[**a**](u)*',
  '**https://x.example/a**https://y.example**',
  'x\n| a | b |\n|---|---|\nx\n| c | d |\n|---|---|',
  '```\n```\n```\n[**a**](u)',
  '```quote\n````\n[**a**](u)\n```\n````\n```',
  '> x\n> | a |\n> |---|\n> [**a**](u)',
  'x\n|a|\n|-|\n',
  '[[**a**](u)](v)',
  '[a](u)**https://x.example**[b](v)',
];

describe('normalizeMarkdown: idempotence', () => {
  it('normalize(normalize(x)) === normalize(x) over a corpus of tricky inputs', () => {
    for (const input of [...HAND_PICKED, ...corpus(3000)]) {
      const once = normalizeMarkdown(input);
      expect(normalizeMarkdown(once), JSON.stringify(input)).toBe(once);
    }
  });

  it('never changes the content of a code fence', () => {
    const fence = '~'.repeat(40);
    for (const body of corpus(1000)) {
      const input = `lead [**a**](u)\n${fence}\n${body}\n${fence}\ntrail [**b**](v)`;
      const out = normalizeMarkdown(input);
      expect(out, JSON.stringify(body)).toBe(
        `lead **[a](u)**\n${fence}\n${body}\n${fence}\ntrail **[b](v)**`,
      );
    }
  });
});
