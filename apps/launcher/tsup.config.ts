import { defineConfig } from 'tsup';
import { appBuilds } from '../../tsup.base.js';

export default defineConfig(appBuilds());
