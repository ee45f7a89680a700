import { describe, expect, it } from 'vitest';
import { parseSite } from './site.js';

describe('parseSite', () => {
  it.each([
    ['https://acme.zulipchat.com', 'https://acme.zulipchat.com', ''],
    ['https://acme.zulipchat.com/', 'https://acme.zulipchat.com', ''],
    ['https://acme.zulipchat.com/api', 'https://acme.zulipchat.com', ''],
    ['https://acme.zulipchat.com/api/v1/', 'https://acme.zulipchat.com', ''],
    ['  https://chat.example:8443/zulip/ ', 'https://chat.example:8443/zulip', '/zulip'],
    ['http://127.0.0.1:9991', 'http://127.0.0.1:9991', ''],
    ['http://localhost:9991/api/v1', 'http://localhost:9991', ''],
    ['http://[::1]:8080', 'http://[::1]:8080', ''],
  ])('accepts %s', (input, url, basePath) => {
    expect(parseSite(input)).toMatchObject({ url, basePath });
  });

  it.each([
    ['not a url'],
    ['ftp://acme.example'],
    ['javascript:alert(1)'],
    ['http://acme.example'],
    ['http://10.0.0.5'],
    ['http://127.0.0.1.evil.example'],
    ['https://user:pass@acme.example'],
    ['https://acme.example/?x=1'],
    ['https://acme.example/#frag'],
  ])('refuses %s with CORE_INSECURE_URL', (input) => {
    expect(() => parseSite(input)).toThrow(expect.objectContaining({ code: 'CORE_INSECURE_URL' }));
  });

  it('accepts http beyond loopback only when explicitly allowed', () => {
    expect(parseSite('http://acme.example', { allowInsecureHttp: true }).origin).toBe('http://acme.example');
  });

  it('does not put a password from the URL into the error', () => {
    try {
      parseSite('https://user:hunter2@acme.example');
      expect.unreachable();
    } catch (err) {
      expect(String(err)).not.toContain('hunter2');
    }
  });
});
