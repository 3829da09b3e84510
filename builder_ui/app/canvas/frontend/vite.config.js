// Builds the canvas into one self-contained script, ../static/graph_canvas.js (an IIFE that defines
// `KerasSeqCanvas`), which the Python package ships: `make canvas` runs this.
import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vite";

export default defineConfig({
  // A library build leaves `process.env.NODE_ENV` alone; the browser has no `process`.
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  plugins: [svelte({ compilerOptions: { css: "injected" }, emitCss: false })],
  build: {
    outDir: "../static",
    emptyOutDir: true,
    sourcemap: false,
    minify: true,
    lib: {
      entry: "src/main.js",
      name: "KerasSeqCanvas",
      formats: ["iife"],
      fileName: () => "graph_canvas.js",
    },
  },
});
