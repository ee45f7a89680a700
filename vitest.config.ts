import { defineConfig } from 'vitest/config';
import { packageProject } from './vitest.shared.js';

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'apps/*',
      packageProject(import.meta.dirname, { name: 'workspace', include: ['test/**/*.test.ts'] }),
    ],
  },
});
