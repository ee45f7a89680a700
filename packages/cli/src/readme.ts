import { readFileSync, writeFileSync } from 'node:fs';
import { CliError } from './errors.js';

/** The markers a README's generated settings table sits between. */
const SETTINGS_MARKERS = Object.freeze({ start: '<!-- settings:start -->', end: '<!-- settings:end -->' });

/**
 * Rewrites the generated table of the README at `path`: everything between the settings
 * markers becomes `table`, so the README, `--help` and the schema never disagree.
 *
 * @throws CliError `CLI_README_MARKERS_MISSING` when the file lacks the markers, in order.
 */
export function writeReadmeTable(path: string, table: string): void {
  const readme = readFileSync(path, 'utf8');
  const from = readme.indexOf(SETTINGS_MARKERS.start);
  const to = readme.indexOf(SETTINGS_MARKERS.end);
  if (from < 0 || to < from) {
    throw new CliError(
      'CLI_README_MARKERS_MISSING',
      `${path} lacks the ${SETTINGS_MARKERS.start} ... ${SETTINGS_MARKERS.end} markers`,
      { details: { file: path } },
    );
  }
  writeFileSync(
    path,
    `${readme.slice(0, from + SETTINGS_MARKERS.start.length)}\n${table}\n${readme.slice(to)}`,
  );
}

/** The generated table of a README's text, as {@link writeReadmeTable} put it there; `undefined` without markers. */
export function readmeTable(readme: string): string | undefined {
  const from = readme.indexOf(SETTINGS_MARKERS.start);
  const to = readme.indexOf(SETTINGS_MARKERS.end);
  if (from < 0 || to < from) return undefined;
  return readme.slice(from + SETTINGS_MARKERS.start.length, to).trim();
}
