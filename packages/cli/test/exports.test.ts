import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import * as api from '../src/index.js';

// The public surface, recorded: adding or removing an export is an API decision for review.
it('exports exactly the recorded surface', () => {
  expect(Object.keys(api).sort()).toEqual([
    'CliError',
    'ExitCode',
    'answerHelpOrVersion',
    'configurationProblems',
    'createLogger',
    'createRedactor',
    'defineMain',
    'defineSettings',
    'expandHome',
    'flagSwitch',
    'homeDirectory',
    'integer',
    'invalidConfigurationMessage',
    'isCliError',
    'logLevels',
    'matching',
    'oneOf',
    'optionalBoolean',
    'optionalInteger',
    'parsedBy',
    'problem',
    'quoteForError',
    'readPackageVersion',
    'readmeTable',
    'reportInvalidConfiguration',
    'runBin',
    'setting',
    'splitList',
    'streamAllowlist',
    'strictBoolean',
    'text',
    'textWithDefault',
    'waitForAbort',
    'writeReadmeTable',
  ]);
});

it('the README lists every export', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const exportsSection = readme.slice(readme.indexOf('## Exports'), readme.indexOf('## Error codes'));
  for (const name of Object.keys(api)) expect(exportsSection, name).toMatch(new RegExp(`\`${name}\\b`));
});
