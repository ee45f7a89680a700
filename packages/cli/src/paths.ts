import { homedir } from 'node:os';
import { join } from 'node:path';

/** The home directory a bin expands `~` with: `HOME` from its environment when set, else the OS's. */
export function homeDirectory(env: Readonly<Record<string, string | undefined>>): string {
  return env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
}

/** `~` and `~/...` expanded against `home`; any other path is returned as it is. */
export function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  return path.startsWith('~/') ? join(home, path.slice(2)) : path;
}
