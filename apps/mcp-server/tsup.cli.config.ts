import { defineConfig } from 'tsup';
import { binBuild } from '../../tsup.base.js';

// Builds only the bin, without declarations: the spawned-binary tests use it (seconds faster).
export default defineConfig(binBuild());
