import { afterEach } from 'vitest';

// Library code must not print: stdout carries the MCP protocol on stdio. A stray
// console call in code under test fails the test that triggered it.
const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
const calls: string[] = [];

for (const method of methods) {
  console[method] = (...args: unknown[]) => {
    calls.push(`console.${method}(${args.map(String).join(' ')})`);
  };
}

afterEach(() => {
  if (calls.length > 0) {
    const seen = calls.splice(0);
    throw new Error(`unexpected console output:\n${seen.join('\n')}`);
  }
});
