import { defineConfig } from "vitest/config";

// Two projects in one run: Node (real libSQL files, real HTTP servers on 127.0.0.1) and
// workerd (the real Worker over D1, test/worker/vitest.config.ts).
export default defineConfig({
  test: {
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/worker/**", "node_modules/**"],
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      "./test/worker/vitest.config.ts",
    ],
  },
});
