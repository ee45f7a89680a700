import { describe, expect, it } from 'vitest';
import { PersonNames, personLabel } from './person-names.js';

const realm = (...names: [number, string][]) =>
  new PersonNames(names.map(([user_id, full_name]) => ({ user_id, full_name })));

describe('PersonNames', () => {
  it('leaves a plain name nobody else holds alone', () => {
    const people = realm([1, 'Olivia Owner'], [2, 'Ann Lee'], [3, 'Анна Ли'], [4, 'Zoë 🌴'], [5, 'Ann ❤️']);
    for (const [id, name] of [
      [1, 'Olivia Owner'],
      [2, 'Ann Lee'],
      [3, 'Анна Ли'],
      [4, 'Zoë 🌴'],
      [5, 'Ann ❤️'],
    ] as const) {
      expect([name, people.needsUserId(name, id)]).toEqual([name, false]);
    }
  });

  it('marks a name two people hold, exactly or once invisible characters are dropped and it is folded', () => {
    const people = realm(
      [1, 'Olivia Owner'],
      [2, 'Sam Doe'],
      [3, 'Sam Doe'],
      [4, 'Ｏlivia  owner'],
      [5, 'Pat Kim'],
      [6, 'Pat\u00a0Kim'],
    );
    for (const [id, name] of [
      [1, 'Olivia Owner'],
      [2, 'Sam Doe'],
      [3, 'Sam Doe'],
      [4, 'Ｏlivia  owner'],
      [5, 'Pat Kim'],
      [6, 'Pat\u00a0Kim'],
    ] as const) {
      expect([name, people.needsUserId(name, id)]).toEqual([name, true]);
    }
  });

  it('marks a name that holds what hides or disguises it, whoever else there is', () => {
    const people = realm([1, 'Olivia Owner']);
    for (const name of [
      'Olivia Owner\u200b',
      'Olivia\u200dOwner',
      '\u2060Olivia Owner',
      'Olivia Owner\ufeff',
      'Olivia Ow\u00adner',
      'Olivia Owner\ufe0f',
      'Olivia Owner\u{e0101}',
      'Olivia \u3164Owner',
      '\u115f',
      'Olivia Owner \u0301',
      '\u2800',
      'Оlivia Owner', // a Cyrillic О among Latin letters
      'Olivia Οwner', // a Greek Ο
    ]) {
      expect([name, people.needsUserId(name, 9)]).toEqual([name, true]);
      expect([name, new PersonNames().needsUserId(name, 9)]).toEqual([name, true]);
    }
  });

  it('marks a name another person holds, even when the sender is not in the index', () => {
    const people = realm([1, 'Olivia Owner']);
    expect(people.needsUserId('Olivia Owner', 1)).toBe(false);
    expect(people.needsUserId('Olivia Owner', 66)).toBe(true);
    expect(people.needsUserId('olivia owner', 66)).toBe(true);
    expect(people.needsUserId('Someone New', 66)).toBe(false);
  });

  it('follows renames and replacements, and says so through its version', () => {
    const people = realm([1, 'Olivia Owner'], [2, 'Mallory']);
    const before = people.version;
    people.set(2, 'Olivia Owner');
    expect(people.version).not.toBe(before);
    expect(people.needsUserId('Olivia Owner', 1)).toBe(true);
    people.set(2, 'Mallory');
    expect(people.needsUserId('Olivia Owner', 1)).toBe(false);
    people.replace([
      { user_id: 1, full_name: 'Olivia Owner' },
      { user_id: 3, full_name: 'Olivia Owner' },
    ]);
    expect(people.needsUserId('Olivia Owner', 1)).toBe(true);
    expect(people.needsUserId('Mallory', 2)).toBe(false);
  });
});

describe('personLabel', () => {
  it('adds the user id only where a name alone would not tell the person apart', () => {
    const people = realm([1, 'Sam Doe'], [2, 'Sam Doe'], [3, 'Ann Lee']);
    expect(personLabel('Ann Lee', 3, people)).toBe('Ann Lee');
    expect(personLabel('Sam Doe', 2, people)).toBe('Sam Doe (user 2)');
    expect(personLabel('Sam Doe', 2)).toBe('Sam Doe');
    expect(personLabel('Ann Lee\u200b', 4)).toBe('Ann Lee\u200b (user 4)');
  });
});
