// A slice of Zulip's Unicode emoji names (its own naming, aliases included). Zulip knows
// about 1800; these cover what tests, demos and agents commonly use.
const table: Record<string, string> = {
  '+1': '1f44d',
  thumbs_up: '1f44d',
  like: '1f44d',
  '-1': '1f44e',
  thumbs_down: '1f44e',
  tada: '1f389',
  party_popper: '1f389',
  heart: '2764',
  love: '2764',
  smile: '1f642',
  slight_smile: '1f642',
  smiley: '1f603',
  grinning: '1f600',
  big_smile: '1f604',
  laughing: '1f606',
  lol: '1f606',
  joy: '1f602',
  rolling_on_the_floor_laughing: '1f923',
  wink: '1f609',
  blush: '1f60a',
  heart_eyes: '1f60d',
  upside_down: '1f643',
  thinking: '1f914',
  cry: '1f622',
  sob: '1f62d',
  angry: '1f620',
  scream: '1f631',
  sweat_smile: '1f605',
  octopus: '1f419',
  check: '2705',
  white_check_mark: '2705',
  check_mark: '2714',
  x: '274c',
  cross_mark: '274c',
  ear: '1f442',
  eyes: '1f440',
  looking: '1f440',
  rocket: '1f680',
  fire: '1f525',
  wave: '1f44b',
  hello: '1f44b',
  clap: '1f44f',
  pray: '1f64f',
  '100': '1f4af',
  warning: '26a0',
  star: '2b50',
  sparkles: '2728',
  bug: '1f41b',
  coffee: '2615',
  cake: '1f370',
  pizza: '1f355',
  gift: '1f381',
  muscle: '1f4aa',
  working_on_it: '1f6e0',
  hammer_and_wrench: '1f6e0',
  question: '2753',
  exclamation: '2757',
  zap: '26a1',
  high_voltage: '26a1',
  light_bulb: '1f4a1',
  idea: '1f4a1',
  hourglass: '231b',
  lock: '1f512',
  robot: '1f916',
  cat: '1f408',
  dog: '1f415',
  sunny: '2600',
  cloud: '2601',
  rainbow: '1f308',
  books: '1f4da',
  memo: '1f4dd',
  pencil: '270f',
  calendar: '1f4c5',
  clock: '1f570',
  bell: '1f514',
  mute: '1f507',
  speech_bubble: '1f4ac',
  thought: '1f4ad',
  stop: '1f6d1',
  ok: '1f44c',
  point_up: '261d',
  raised_hands: '1f64c',
  handshake: '1f91d',
  shrug: '1f937',
  facepalm: '1f926',
  trophy: '1f3c6',
  medal: '1f3c5',
  money: '1f4b0',
  chart: '1f4c8',
  package: '1f4e6',
  link: '1f517',
  key: '1f511',
  gear: '2699',
  magnifying_glass: '1f50d',
  pin: '1f4cc',
  paperclip: '1f4ce',
  green_circle: '1f7e2',
  red_circle: '1f534',
  yellow_circle: '1f7e1',
};

const namesByCode = new Map<string, string[]>();
for (const [name, code] of Object.entries(table)) {
  const names = namesByCode.get(code);
  if (names) names.push(name);
  else namesByCode.set(code, [name]);
}

/** The code point string (`1f389`) of a Unicode emoji name, if the simulator knows it. */
export function unicodeEmojiCode(name: string): string | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

/** Whether `code` is a Unicode emoji the simulator knows. */
export function isUnicodeEmojiCode(code: string): boolean {
  return namesByCode.has(code);
}

/** Whether `name` is one of the names of Unicode emoji `code`. */
export function unicodeEmojiHasName(code: string, name: string): boolean {
  return namesByCode.get(code)?.includes(name) ?? false;
}

/** The names of the only Zulip "extra" emoji. */
export const ZULIP_EXTRA_EMOJI = 'zulip';
