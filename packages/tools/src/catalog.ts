import { readTools } from './read/index.js';
import type { ToolServices } from './services.js';
import type { ToolDefinition } from './tool.js';
import { writeTools } from './write/index.js';

/**
 * Every tool of the plain-MCP product, bound to one server's services. Each app registers
 * the list on its own transport; read-only mode hides the tools whose `write` is true.
 */
export function createCatalog(services: ToolServices): ToolDefinition[] {
  return [...readTools(services), ...writeTools(services)];
}
