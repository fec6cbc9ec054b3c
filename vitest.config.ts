import { defineConfig } from "vitest/config";

// Node tests: real libSQL files, real HTTP servers on 127.0.0.1. The workerd tests have
// their own config in test/worker/.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/worker/**", "node_modules/**"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
