import { packageProject } from '../../vitest.shared.js';

const project = packageProject(import.meta.dirname);

export default {
  ...project,
  // Builds zulip-mcp (the server the stub agents start) when its bin is missing or stale.
  test: { ...project.test, globalSetup: ['test/global-setup.ts'] },
};
