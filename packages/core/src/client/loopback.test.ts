import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from './loopback.js';

describe('isLoopbackHost', () => {
  it.each([
    'localhost',
    'LOCALHOST',
    'localhost.',
    'app.localhost',
    '127.0.0.1',
    '127.1.2.3',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    '[0000::0001]',
    '::ffff:127.0.0.1',
    '[::ffff:127.9.9.9]',
    '::ffff:7f00:1',
  ])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each([
    '0.0.0.0',
    '::',
    '128.0.0.1',
    '10.0.0.1',
    '::ffff:10.0.0.1',
    '::2',
    'localhost.example.com',
    'mylocalhost',
    'example.com',
    '',
    '127.0.0.1:3000',
    '[::1]:3000',
  ])('%s is not', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
