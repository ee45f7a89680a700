import { describe, expect, it } from 'vitest';
import { isZmcpError } from '../errors.js';
import {
  checkedMessageUrl,
  decodeHashComponent,
  encodeHashComponent,
  messagePermalink,
  permalink,
} from './permalink.js';

describe('encodeHashComponent', () => {
  it.each([
    ['deploys v2', 'deploys.20v2'],
    ['v2.1', 'v2.2E1'],
    ['https://www.zulipexample.com', 'https.3A.2F.2Fwww.2Ezulipexample.2Ecom'],
    ['100%', '100.25'],
    ['Foo_(bar)', 'Foo_.28bar.29'],
    ["it's done!", 'it.27s.20done.21'],
    ['a*b', 'a.2Ab'],
    ['café', 'caf.C3.A9'],
    ['日本', '.E6.97.A5.E6.9C.AC'],
    ['a/b?c#d&e', 'a.2Fb.3Fc.23d.26e'],
    ['safe-_~', 'safe-_~'],
    ['😀', '.F0.9F.98.80'],
    ['', ''],
  ])('%j -> %j', (input, expected) => {
    expect(encodeHashComponent(input)).toBe(expected);
    expect(decodeHashComponent(expected)).toBe(input);
  });

  it('decodes malformed operands to undefined', () => {
    expect(decodeHashComponent('.E6.97')).toBeUndefined();
  });
});

describe('permalink', () => {
  it.each([
    [
      { streamId: 12, streamName: 'general', topic: 'deploys v2', messageId: 4710 },
      'https://zulip.example/#narrow/channel/12-general/topic/deploys.20v2/near/4710',
    ],
    [{ streamId: 12, streamName: 'general' }, 'https://zulip.example/#narrow/channel/12-general'],
    [{ streamId: 12 }, 'https://zulip.example/#narrow/channel/12'],
    [
      { streamId: 12, streamName: 'release notes', topic: 'v1.0 (final)' },
      'https://zulip.example/#narrow/channel/12-release-notes/topic/v1.2E0.20.28final.29',
    ],
    [
      { streamId: 3, streamName: 'équipe', topic: '' },
      'https://zulip.example/#narrow/channel/3-.C3.A9quipe/topic/',
    ],
    [
      { streamId: 12, streamName: 'general', topic: 'deploys', messageId: 4710, conversation: true },
      'https://zulip.example/#narrow/channel/12-general/topic/deploys/with/4710',
    ],
    [{ dmUserIds: [21, 8], messageId: 4711 }, 'https://zulip.example/#narrow/dm/8,21-dm/near/4711'],
    [{ dmUserIds: [8] }, 'https://zulip.example/#narrow/dm/8-dm'],
    [{ dmUserIds: [30, 8, 21, 8], messageId: 5 }, 'https://zulip.example/#narrow/dm/8,21,30-group/near/5'],
  ])('%j', (target, expected) => {
    expect(permalink('https://zulip.example', target)).toBe(expected);
  });

  it('normalizes the site and keeps a path prefix', () => {
    expect(permalink('https://zulip.example/', { streamId: 1 })).toBe(
      'https://zulip.example/#narrow/channel/1',
    );
    expect(permalink('https://host.example/chat//', { streamId: 1 })).toBe(
      'https://host.example/chat/#narrow/channel/1',
    );
  });

  it.each([
    ['not a URL', 'zulip.example', { streamId: 1 }],
    ['a non-http scheme', 'ftp://zulip.example', { streamId: 1 }],
    ['a negative stream id', 'https://z.example', { streamId: -1 }],
    ['a fractional message id', 'https://z.example', { streamId: 1, messageId: 1.5 }],
    ['an empty DM', 'https://z.example', { dmUserIds: [] }],
  ])('rejects %s', (_name, site, target) => {
    try {
      permalink(site, target);
      throw new Error('expected an error');
    } catch (err) {
      expect(isZmcpError(err, 'CORE_INVALID_ARGUMENT')).toBe(true);
    }
  });
});

describe('messagePermalink', () => {
  it('links a stream message near its id', () => {
    expect(
      messagePermalink('https://zulip.example', {
        id: 4710,
        type: 'stream',
        display_recipient: 'general',
        subject: 'deploys v2',
        stream_id: 12,
      }),
    ).toBe('https://zulip.example/#narrow/channel/12-general/topic/deploys.20v2/near/4710');
  });

  it('links a DM through its participants', () => {
    expect(
      messagePermalink(
        'https://zulip.example',
        {
          id: 4711,
          type: 'private',
          display_recipient: [
            { id: 21, email: 'b@x', full_name: 'B' },
            { id: 8, email: 'a@x', full_name: 'A' },
          ],
          subject: '',
        },
        { conversation: true },
      ),
    ).toBe('https://zulip.example/#narrow/dm/8,21-dm/with/4711');
  });

  it('needs a stream id for a stream message', () => {
    expect(() =>
      messagePermalink('https://zulip.example', {
        id: 1,
        type: 'stream',
        display_recipient: 'g',
        subject: 't',
      }),
    ).toThrow(/stream_id/);
  });
});

describe('checkedMessageUrl', () => {
  const site = 'https://zulip.example';
  it.each([
    'https://zulip.example/#narrow/channel/12-general/topic/deploys.20v2.2E1/near/4710',
    'https://zulip.example/#narrow/dm/8,21-dm/near/4711',
    'https://zulip.example/#narrow/channel/12-general/topic/.3Cb.3E/near/1',
  ])('keeps a narrow link on the realm: %s', (url) => {
    expect(checkedMessageUrl(url, site)).toBe(url);
    expect(checkedMessageUrl(url, `${site}/`)).toBe(url);
  });

  it.each([
    ['absent', undefined],
    ['not a string', 42],
    ['another origin', 'https://evil.example/#narrow/channel/12-general/near/1'],
    ['another scheme', 'http://zulip.example/#narrow/channel/12-general/near/1'],
    ['not a narrow', 'https://zulip.example/#settings'],
    ['a look-alike host', 'https://zulip.example.evil.example/#narrow/channel/1-x/near/1'],
    ['raw markup', 'https://zulip.example/#narrow/channel/12-general/topic/<b>/near/1'],
    ['white space', 'https://zulip.example/#narrow/channel/12-general/topic/a b/near/1'],
    ['a line break', 'https://zulip.example/#narrow/channel/12-general/near/1\n[#secret > x]'],
    ['too long', `https://zulip.example/#narrow/channel/${'x'.repeat(5000)}`],
  ])('refuses %s', (_what, url) => {
    expect(checkedMessageUrl(url, site)).toBeUndefined();
  });
});
