import { describe, expect, it } from 'vitest';
import { parseSite } from './site.js';
import { resolveUploadLocation } from './upload-path.js';

const site = parseSite('https://zulip.example');

describe('resolveUploadLocation', () => {
  it.each([
    ['/user_uploads/2/7c/Jd9sK2qWmZ3x/report.pdf', '2/7c/Jd9sK2qWmZ3x/report.pdf'],
    ['user_uploads/2/ab/x/a%20b.txt', '2/ab/x/a%20b.txt'],
    ['https://zulip.example/user_uploads/2/ab/x/y.png', '2/ab/x/y.png'],
    ['/user_uploads/temporary/4A6F/report.pdf', 'temporary/4A6F/report.pdf'],
  ])('accepts %s', (input, relative) => {
    expect(resolveUploadLocation(input, site).relative).toBe(relative);
  });

  it.each([
    ['https://evil.example/user_uploads/2/x/y.png'],
    ['http://zulip.example/user_uploads/2/x/y.png'],
    ['//evil.example/user_uploads/2/x'],
    ['/user_uploads/../api/v1/users/me'],
    ['/user_uploads/2/%2e%2e/%2E%2E/secret'],
    ['/user_uploads/2/..%2f..%2fsecret'],
    ['/user_uploads/2/x\\..\\y'],
    ['/api/v1/users/me'],
    ['/user_uploads/'],
    ['/user_uploads/2/x?download=1'],
    ['/user_uploads/2/x#frag'],
    ['/user_uploads/2/\u0000x'],
    ['/user_uploads/2/%zz'],
    ['https://user:pw@zulip.example/user_uploads/2/x'],
    [''],
    [`/user_uploads/${'a'.repeat(3000)}`],
  ])('refuses %s', (input) => {
    expect(() => resolveUploadLocation(input, site)).toThrow(
      expect.objectContaining({ code: 'CORE_INVALID_ARGUMENT' }),
    );
  });

  it('honours a site served under a path prefix', () => {
    const prefixed = parseSite('https://zulip.example/chat');
    expect(resolveUploadLocation('/user_uploads/1/a.txt', prefixed).url.pathname).toBe(
      '/chat/user_uploads/1/a.txt',
    );
    expect(() => resolveUploadLocation('https://zulip.example/user_uploads/1/a.txt', prefixed)).toThrow();
  });
});
