// One error idiom in every package, checked in one place: each error class sets its name, code,
// message and cause, carries a brand so that `instanceof` holds across copies of the package
// (undici's idiom: `Symbol.for('@zmcp/<package>.<Class>')` and `static [Symbol.hasInstance]`),
// and every code of the package's error union is a row of its README's error table. Every
// package that depends on core builds its classes on core's one base, `CodedError`; @zmcp/mcpl
// and @zmcp/zulip-sim know nothing of core by design and keep classes of their own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importEntry, type WorkspacePackage, workspacePackages } from './support/workspace.js';

type ErrorClass = new (...args: never[]) => Error & { code: string };
type Make = (cls: ErrorClass, code: string, message: string, cause: unknown) => Error & { code: string };

const plain: Make = (cls, code, message, cause) =>
  new (cls as unknown as new (c: string, m: string, o: object) => Error & { code: string })(code, message, {
    cause,
  });

interface ErrorFamily {
  /** The package's code prefix (`CORE_`) and the union it is declared in. */
  prefix: string;
  union: string;
  /** The package's error classes, how to build one, and its `is…Error` helper when it has one. */
  classes: { name: string; make: Make; is?: string; parents?: string[] }[];
  /** False for the packages that do not depend on core, so do not extend its base. */
  coreBase?: false;
}

const families: Record<string, ErrorFamily> = {
  '@zmcp/cli': {
    prefix: 'CLI_',
    union: 'CliErrorCode',
    classes: [{ name: 'CliError', make: plain, is: 'isCliError' }],
  },
  '@zmcp/core': {
    prefix: 'CORE_',
    union: 'ZmcpErrorCode',
    classes: [
      { name: 'ZmcpError', make: plain, is: 'isZmcpError' },
      {
        name: 'ZulipApiError',
        make: (cls, code, message, cause) =>
          new (cls as unknown as new (c: string, m: string, o: object) => Error & { code: string })(
            code,
            message,
            { status: 400, zulipCode: 'BAD_REQUEST', cause },
          ),
        is: 'isZmcpError',
        parents: ['ZmcpError'],
      },
    ],
  },
  '@zmcp/delivery': {
    prefix: 'DELIVERY_',
    union: 'DeliveryErrorCode',
    classes: [{ name: 'DeliveryError', make: plain, is: 'isDeliveryError' }],
  },
  '@zmcp/fleet': {
    prefix: 'FLEET_',
    union: 'FleetErrorCode',
    classes: [{ name: 'FleetError', make: plain, is: 'isFleetError' }],
  },
  '@zmcp/mcpl': {
    prefix: 'MCPL_',
    union: 'McplErrorCode',
    classes: [{ name: 'McplError', make: plain }],
    coreBase: false,
  },
  '@zmcp/tools': {
    prefix: 'TOOLS_',
    union: 'ToolErrorCode',
    classes: [
      {
        name: 'ToolError',
        make: (cls, code, message, cause) =>
          new (
            cls as unknown as new (
              c: string,
              m: string,
              d: undefined,
              o: object,
            ) => Error & { code: string }
          )(code, message, undefined, { cause }),
        is: 'isToolError',
      },
    ],
  },
  '@zmcp/uploads': {
    prefix: 'UPLOAD_',
    union: 'UploadErrorCode',
    classes: [{ name: 'UploadError', make: plain, is: 'isUploadError' }],
  },
  '@zmcp/server-kit': {
    prefix: 'SERVER_KIT_',
    union: 'ServerKitErrorCode',
    classes: [{ name: 'ServerKitError', make: plain, is: 'isServerKitError' }],
  },
  '@zmcp/zulip-sim': {
    prefix: 'SIM_',
    union: 'SimErrorCode',
    classes: [{ name: 'SimError', make: plain }],
    coreBase: false,
  },
  '@zmcp/launcher': {
    prefix: 'LAUNCHER_',
    union: 'LauncherErrorCode',
    classes: [{ name: 'LauncherError', make: plain, is: 'isLauncherError' }],
  },
  '@zmcp/mcp-server': {
    prefix: 'MCP_',
    union: 'McpServerErrorCode',
    classes: [{ name: 'McpServerError', make: plain }],
  },
  '@zmcp/mcpl-server': {
    prefix: 'MCPL_SERVER_',
    union: 'McplServerErrorCode',
    classes: [{ name: 'McplServerError', make: plain }],
  },
};

/** The string literals of `export type <union> = ...;` in the package's src/errors.ts. */
function declaredCodes(pkg: WorkspacePackage, union: string): string[] {
  const source = readFileSync(join(pkg.dir, 'src', 'errors.ts'), 'utf8').replace(
    /\/\*[\s\S]*?\*\/|\/\/.*$/gm,
    '',
  );
  const start = source.indexOf(`export type ${union} =`);
  if (start === -1) throw new Error(`${pkg.name}: src/errors.ts declares no ${union}`);
  const body = source.slice(start, source.indexOf(';', start));
  return [...body.matchAll(/'([^']+)'/g)].map((m) => m[1] as string);
}

const packages = workspacePackages();

it('every package has an error family in this table', () => {
  expect(packages.map((p) => p.name).sort()).toEqual(Object.keys(families).sort());
});

describe.each(packages)('$name', (pkg) => {
  const family = families[pkg.name] as ErrorFamily;
  const codes = declaredCodes(pkg, family.union);
  const readme = readFileSync(join(pkg.dir, 'README.md'), 'utf8');
  const short = pkg.name.replace(/^@zmcp\//, '');

  it(`declares SCREAMING_SNAKE codes with the ${family.prefix} prefix`, () => {
    expect(codes.length).toBeGreaterThan(0);
    for (const code of codes) expect(code).toMatch(new RegExp(`^${family.prefix}[A-Z0-9]+(_[A-Z0-9]+)*$`));
  });

  it('documents every code in its README error table, and no code it does not have', () => {
    const missing = codes.filter((code) => !new RegExp(`^\\| \`${code}\` +\\|`, 'm').test(readme));
    expect(missing).toEqual([]);
    const rows = [...readme.matchAll(new RegExp(`^\\| \`(${family.prefix}[A-Z0-9_]+)\` +\\|`, 'gm'))];
    expect(rows.map((m) => m[1]).filter((code) => !codes.includes(code as string))).toEqual([]);
  });

  describe.each(family.classes)('$name', ({ name, make, is, parents = [] }) => {
    it.each(codes)('%s: name, code, message and cause; branded; instanceof across copies', async (code) => {
      const entry = await importEntry(pkg);
      const cls = entry[name] as ErrorClass;
      const cause = new Error('underneath');
      const err = make(cls, code, 'what failed', cause);
      expect(err).toBeInstanceOf(Error);
      expect(err).toBeInstanceOf(cls);
      expect(err.name).toBe(name);
      expect(err.code).toBe(code);
      expect(err.message).toBe('what failed');
      expect(err.cause).toBe(cause);
      expect('cause' in make(cls, code, 'no cause', undefined)).toBe(false);
      const brands = [name, ...parents].map((n) => Symbol.for(`@zmcp/${short}.${n}`));
      for (const brand of brands) expect((err as unknown as Record<symbol, unknown>)[brand]).toBe(true);
      // Another copy of the package builds its errors with its own classes and the same brands.
      const foreign = Object.assign(new Error('from another copy'), { code });
      for (const brand of brands) Object.defineProperty(foreign, brand, { value: true });
      expect(foreign).toBeInstanceOf(cls);
      for (const parent of parents) expect(err).toBeInstanceOf(entry[parent] as ErrorClass);
      const core = packages.find((p) => p.name === '@zmcp/core') as WorkspacePackage;
      const CodedError = (await importEntry(core)).CodedError as ErrorClass;
      if (family.coreBase === false) expect(err).not.toBeInstanceOf(CodedError);
      else {
        // Core's one base: its brand on every error, and the guard core's for every family.
        expect(err).toBeInstanceOf(CodedError);
        expect((err as unknown as Record<symbol, unknown>)[Symbol.for('@zmcp/core.CodedError')]).toBe(true);
      }
      expect(Object.assign(new Error('a look-alike'), { code })).not.toBeInstanceOf(cls);
      if (is !== undefined) {
        const guard = entry[is] as (err: unknown, ...codes: string[]) => boolean;
        expect(guard(err)).toBe(true);
        expect(guard(err, code)).toBe(true);
        expect(guard(foreign, code)).toBe(true);
        expect(guard(err, `${family.prefix}NOT_THIS_ONE`)).toBe(false);
        expect(guard(Object.assign(new Error('a look-alike'), { code }))).toBe(false);
        expect(guard(code)).toBe(false);
        expect(guard(null)).toBe(false);
      }
    });
  });
});
