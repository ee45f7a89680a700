import { describe, expect, it } from 'vitest';
import { isNoBotsContent, isNoBotsMessage, isNoBotsTopic } from './nobots.js';

describe('isNoBotsTopic', () => {
  it.each([
    ['/nobots', true],
    ['salary talk /nobots', true],
    ['/NoBots planning', true],
    ['(/nobots)', true],
    ['[/nobots] hr', true],
    ['hr: /nobots.', true],
    ['**/nobots**', true],
    ['nobots', false],
    ['/nobots.txt', false],
    ['/nobots/archive', false],
    ['foo/nobots', false],
    ['https://x.example/nobots', false],
    ['/nobotsy', false],
    ['', false],
  ])('%j -> %s', (topic, expected) => {
    expect(isNoBotsTopic(topic)).toBe(expected);
  });
});

describe('isNoBotsContent', () => {
  it.each([
    ['/nobots', true],
    ['please keep this private /nobots', true],
    ['/nobots\nrest of message', true],
    ['> quoting: /nobots', true],
    ['see [/nobots](https://x.example)', true],
    ['explaining `/nobots` to you', false],
    ['``a `/nobots` b``', false],
    ['```\n/nobots\n```', false],
    ['~~~~\n```\n/nobots\n```\n~~~~', false],
    ['    /nobots (indented code)', false],
    ['a [link](/nobots) in a destination', false],
    ['https://x.example/nobots', false],
    ['<https://x.example/?q=/nobots>', false],
    ['path /nobots/thing', false],
    ['nothing here', false],
    ['```\ncode\n```\n/nobots', true],
  ])('%j -> %s', (content, expected) => {
    expect(isNoBotsContent(content)).toBe(expected);
  });

  it.each([
    ['<p>/nobots</p>', true],
    ['<p>keep out /nobots.</p>', true],
    ['<p><code>/nobots</code></p>', false],
    ['<div class="codehilite"><pre><span></span><code>/nobots\n</code></pre></div>', false],
    ['<p><a href="https://x.example/nobots">link</a></p>', false],
    ['<p><a href="https://x.example">/nobots</a></p>', true],
  ])('HTML %j -> %s', (content, expected) => {
    expect(isNoBotsContent(content, 'text/html')).toBe(expected);
  });
});

describe('isNoBotsMessage', () => {
  it('hides a message by its content or by its topic', () => {
    expect(isNoBotsMessage({ content: 'hi /nobots', subject: 'general' })).toBe(true);
    expect(isNoBotsMessage({ content: 'hi', subject: 'hr /nobots' })).toBe(true);
    expect(isNoBotsMessage({ content: 'hi', subject: 'general' })).toBe(false);
    expect(isNoBotsMessage({ content: '<p>/nobots</p>', subject: '', content_type: 'text/html' })).toBe(true);
  });
});
