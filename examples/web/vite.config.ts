import { defineConfig } from 'vite';

// Relative asset URLs: dist/ works wherever it is served from.
export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, target: 'es2022' },
});
