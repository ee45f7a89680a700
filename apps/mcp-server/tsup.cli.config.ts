import { defineConfig } from 'tsup';
import { cliBuild } from './tsup.config.js';

// Builds only the bin, without declarations: the spawned-binary tests use it (seconds faster).
export default defineConfig(cliBuild);
