import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";

/** The page's serious and critical axe violations, one line each (rule, help, where). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
}
