// The README examples type-check as a user's code would against the packages' sources: the
// readme tests run them (types stripped), so a wrong type in one would otherwise go unnoticed.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { readmeExamples } from './support/readme.js';

const root = join(import.meta.dirname, '..');
const dirs = ['packages', 'apps'].flatMap((group) =>
  readdirSync(join(root, group))
    .map((name) => join(root, group, name))
    .filter((dir) => existsSync(join(dir, 'package.json'))),
);

/** Every ts example, as a file of its package's folder (that is where its imports resolve from). */
function virtualFiles(): Map<string, { code: string; where: string }> {
  const files = new Map<string, { code: string; where: string }>();
  for (const dir of dirs) {
    for (const example of readmeExamples(dir)) {
      const name = example.named ? example.file : `readme-${example.line}.ts`;
      files.set(join(dir, `.readme-types`, name), {
        code: example.code,
        where: `${dir.slice(root.length + 1)}/README.md:${example.line}`,
      });
    }
  }
  return files;
}

describe('README examples', () => {
  it('type-check with the settings the packages use', () => {
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.base.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    if (config === undefined) throw new Error('tsconfig.base.json did not parse');
    const files = virtualFiles();
    expect(files.size).toBeGreaterThan(10);
    const options: ts.CompilerOptions = { ...config.options, noEmit: true, incremental: false };
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    const fileExists = host.fileExists.bind(host);
    const getSourceFile = host.getSourceFile.bind(host);
    host.readFile = (file) => files.get(file)?.code ?? readFile(file);
    host.fileExists = (file) => files.has(file) || fileExists(file);
    host.getSourceFile = (file, language, onError, create) => {
      const virtual = files.get(file);
      return virtual === undefined
        ? getSourceFile(file, language, onError, create)
        : ts.createSourceFile(file, virtual.code, language, true);
    };
    const program = ts.createProgram({ rootNames: [...files.keys()], options, host });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file !== undefined && files.has(d.file.fileName))
      .map((d) => {
        const file = d.file as ts.SourceFile;
        const { line } = file.getLineAndCharacterOfPosition(d.start ?? 0);
        const where = files.get(file.fileName)?.where ?? file.fileName;
        return `${where} (+${line + 1}): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
      });
    expect(problems).toEqual([]);
  }, 120_000);
});
