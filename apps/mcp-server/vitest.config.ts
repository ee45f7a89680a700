import { packageProject } from '../../vitest.shared.js';

const project = packageProject(import.meta.dirname);

export default {
  ...project,
  // Builds dist/cli.js when it is missing or older than the sources: the spawned-binary tests run it.
  test: { ...project.test, globalSetup: ['test/global-setup.ts'] },
};
