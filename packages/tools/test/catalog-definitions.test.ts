import { expect, it } from 'vitest';
import { createCatalog } from '../src/catalog.js';
import type { ToolServices } from '../src/services.js';

it('builds the catalog without reading its services: they are used only when a tool runs', () => {
  const read: string[] = [];
  const unbound = new Proxy({} as ToolServices, {
    get(_, key) {
      read.push(String(key));
      throw new Error(`read ${String(key)}`);
    },
  });
  const tools = createCatalog(unbound);
  expect(read).toEqual([]);
  expect(tools.length).toBeGreaterThan(20);
});
