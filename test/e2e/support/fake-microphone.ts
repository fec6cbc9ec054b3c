import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { hasChromium } from "./chromium";

/**
 * What the test browser's fake microphone plays: a spoken sentence made with espeak-ng, for
 * the whole browser project (silence where espeak-ng is missing). Each worker launches its
 * browser with it (./stack.ts).
 */
export default async function setup(project: TestProject) {
  if (!hasChromium) return;
  const dir = mkdtempSync(join(tmpdir(), "e2e-voice-"));
  project.provide("fakeAudioFile", speechWav(join(dir, "speech.wav")) ?? "");
  return () => rmSync(dir, { recursive: true, force: true });
}

/** A spoken sentence for Chromium's fake microphone, made with espeak-ng; undefined without it. */
function speechWav(file: string): string | undefined {
  try {
    execFileSync("espeak-ng", ["-w", file, "water the monstera every week"]);
    return file;
  } catch {
    return undefined;
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The spoken sentence Chromium's fake microphone plays; empty without espeak-ng. */
    fakeAudioFile: string;
  }
}
