// Types of clis.mjs, for the TypeScript tests that check the stand-ins against the real CLIs.

export declare class CliUsageError extends Error {
  constructor(message: string, exitCode: number);
  readonly exitCode: number;
}

export interface ParsedClaude {
  options: Record<string, true | string[]>;
  prompt: string | undefined;
}
export declare function parseClaude(argv: string[]): ParsedClaude;
export declare function claudePrompt(parsed: ParsedClaude, stdin: string): string;
export declare function claudeRefusal(parsed: ParsedClaude, tool: string): string | undefined;

export interface ParsedCodexExec {
  options: Record<string, true | string[]>;
  prompt: string | undefined;
}
export declare function parseCodexExec(argv: string[]): ParsedCodexExec;
export declare function codexPrompt(parsed: ParsedCodexExec, stdin: string): string;
export declare function codexRefusal(
  parsed: ParsedCodexExec,
  overrides: Record<string, unknown>,
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; openWorldHint?: boolean },
): string | undefined;

export interface ParsedOpencodeRun {
  options: Record<string, boolean | string | string[]>;
  message: string[];
}
export declare function parseOpencodeRun(argv: string[]): ParsedOpencodeRun;
export declare function opencodePrompt(parsed: ParsedOpencodeRun, stdin: string): string;

export declare function opencodeConfig(
  text: string,
  dir: string,
  env?: Readonly<Record<string, string | undefined>>,
): string;

export declare function readStdin(): Promise<string>;
