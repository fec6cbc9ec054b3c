import axe from "axe-core";
import type { Page } from "playwright-core";

/**
 * The page's serious and critical axe violations, one line each (rule, help, where).
 *
 * axe-core run in the page itself (`axe.run`): the same rules as @axe-core/playwright's
 * `analyze()`, which also injects the 550 KB script a second time and finishes in a blank
 * page of its own, about a second more a scan for what only cross-origin frames need (our
 * pages have none). Only the violations' details are collected (`resultTypes`).
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Once a page: a scan after the client navigated (no new document) finds it there.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const { violations } = await window.axe.run(document, { resultTypes: ["violations"] });
    return violations.map((v) => ({ id: v.id, help: v.help, impact: v.impact, targets: v.nodes.map((n) => n.target.join(" ")) }));
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.targets.join(", ")})`);
}

declare global {
  interface Window {
    axe: typeof axe;
  }
}
