import { describe, expect, it } from 'vitest';
import { isZmcpError } from '../errors.js';
import { mentionSyntax } from './mention.js';

describe('mentionSyntax', () => {
  it.each([
    [{ user_id: 26, full_name: 'Polonius' }, {}, '@**Polonius|26**'],
    [{ user_id: 26, full_name: 'Polonius' }, { silent: true }, '@_**Polonius|26**'],
    [{ user_id: 8, full_name: 'Ann Lee' }, {}, '@**Ann Lee|8**'],
    [{ user_id: 8, full_name: 'Ann *the* Lee' }, {}, '@**|8**'],
    [{ user_id: 8, full_name: 'A|B' }, {}, '@**|8**'],
    [{ user_id: 8, full_name: 'Ann\nLee' }, {}, '@**|8**'],
    [{ user_id: 8, full_name: 'Ann\u202ELee' }, {}, '@**|8**'],
    [{ user_id: 8, full_name: '' }, { silent: true }, '@_**|8**'],
  ])('%j %j -> %s', (user, options, expected) => {
    expect(mentionSyntax(user, options)).toBe(expected);
  });

  it.each([[0], [-1], [1.5], [Number.NaN]])('rejects user id %s', (id) => {
    try {
      mentionSyntax({ user_id: id, full_name: 'X' });
      throw new Error('expected an error');
    } catch (err) {
      expect(isZmcpError(err, 'CORE_INVALID_ARGUMENT')).toBe(true);
    }
  });
});
