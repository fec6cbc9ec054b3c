import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "./support/server-process";

// The shell examples of README.md and docs/*.md, run as a reader would run them: every
// ```sh block that talks to localhost:8787 runs, in order, in one bash per page, against
// the real Node server (npm start's entry) over a fresh database in local-login mode. A
// comment line holding JSON right after a command is that command's expected output:
// the same keys and values, where `…` inside a string stands for any text. A block whose
// first line is `# needs: …` says what it needs that a test run lacks, and is not run.

const ROOT = resolve(import.meta.dirname, "..");
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

interface Step {
  command: string;
  expected?: string;
  /** Where the command starts, for failure messages. */
  where: string;
}

/** The runnable commands of a page, continuation lines joined, each with its expected output. */
function stepsOf(page: string): Step[] {
  const text = readFileSync(join(ROOT, page), "utf8");
  const steps: Step[] = [];
  // Fences may be indented (inside a list item); so are their lines.
  const fence = /^([ \t]*)```sh\n([\s\S]*?)^[ \t]*```$/gm;
  for (let block = fence.exec(text); block; block = fence.exec(text)) {
    const indent = block[1]!.length;
    const body = block[2]!.split("\n").map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length))).join("\n");
    if (!body.includes("localhost:8787") || /^# needs: /.test(body)) continue;
    const firstLine = text.slice(0, block.index).split("\n").length + 1;
    const lines = body.replace(/\\\n/g, "\u0000").split("\n");
    let lineNo = firstLine;
    for (const raw of lines) {
      const line = raw.replaceAll("\u0000", "\\\n");
      const where = `${page}:${lineNo}`;
      lineNo += 1 + raw.split("\u0000").length - 1;
      const trimmed = line.trim();
      if (trimmed === "") continue;
      const output = /^# ([[{].*)$/.exec(trimmed);
      if (output) {
        const last = steps.at(-1);
        if (!last || last.expected !== undefined) throw new Error(`${where}: an expected output follows no command`);
        last.expected = output[1]!;
      } else if (!trimmed.startsWith("#")) {
        steps.push({ command: line, where });
      }
    }
  }
  return steps;
}

/** Whether `actual` is what `expected` shows, `…` in an expected string matching any text. */
function matches(expected: unknown, actual: unknown, path = "$"): string | null {
  if (typeof expected === "string") {
    if (typeof actual !== "string") return `${path}: expected a string, got ${JSON.stringify(actual)}`;
    const pattern = new RegExp(`^${expected.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*")}$`);
    return pattern.test(actual) ? null : `${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${path}: expected ${expected.length} items, got ${JSON.stringify(actual)}`;
    for (let i = 0; i < expected.length; i++) {
      const problem = matches(expected[i], actual[i], `${path}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return `${path}: expected an object, got ${JSON.stringify(actual)}`;
    const want = Object.keys(expected).sort();
    const got = Object.keys(actual).sort();
    if (want.join() !== got.join()) return `${path}: keys ${got.join(", ")} are not ${want.join(", ")}`;
    for (const key of want) {
      const problem = matches((expected as Record<string, unknown>)[key], (actual as Record<string, unknown>)[key], `${path}.${key}`);
      if (problem) return problem;
    }
    return null;
  }
  return expected === actual ? null : `${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`;
}

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess();
}, 60_000);
afterAll(async () => {
  await server?.close();
});

describe("the docs' shell examples", () => {
  const runnable = PAGES.map((page) => [page, stepsOf(page)] as const).filter(([, steps]) => steps.length > 0);

  it("include the README's quick start and the share link example", () => {
    const pages = runnable.map(([page]) => page);
    expect(pages).toContain("README.md");
    expect(pages).toContain("docs/contexts.md");
  });

  it.each(runnable)("%s runs as written", (page, steps) => {
    const port = new URL(server.url).port;
    const script = ["set -e"];
    steps.forEach((step, i) => {
      const command = step.command.replaceAll("localhost:8787", `127.0.0.1:${port}`);
      if (step.expected === undefined) script.push(command);
      else script.push(`__out=$(${command})`, `printf '\\n@@%d@@%s@@end@@\\n' ${i} "$__out"`);
    });
    const run = spawnSync("bash", ["-c", script.join("\n")], {
      cwd: ROOT,
      encoding: "utf8",
      // The token script finds the server's local-login key beside its database.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: server.databaseUrl },
      timeout: 60_000,
    });
    expect(run.status, `${page} failed:\n${run.stderr}`).toBe(0);
    const outputs = new Map([...run.stdout.matchAll(/@@(\d+)@@([\s\S]*?)@@end@@/g)].map((m) => [Number(m[1]), m[2]!]));
    steps.forEach((step, i) => {
      if (step.expected === undefined) return;
      const actual = outputs.get(i);
      expect(actual, `${step.where}: no output`).toBeDefined();
      let parsed: unknown;
      try {
        parsed = JSON.parse(actual!);
      } catch {
        throw new Error(`${step.where}: the output is not JSON: ${actual}`);
      }
      expect(matches(JSON.parse(step.expected), parsed), `${step.where}: ${step.command.trim()}`).toBeNull();
    });
  });
});
