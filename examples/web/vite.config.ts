import { defineConfig } from 'vite';

// Relative asset URLs: dist/ works wherever it is served from. Two pages (paths relative to
// this directory, where npm runs the build): a model's curves and the plan explorer.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    rolldownOptions: { input: { index: 'index.html', plan: 'plan.html' } },
  },
});
