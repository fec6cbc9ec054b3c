import type { ComponentChildren } from "preact";

/**
 * A table that may be wider than the screen (a phone's 375 px): it scrolls sideways in its own
 * box, which the keyboard reaches (Tab, then the arrow keys) and a screen reader names.
 */
export function ScrollTable({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must be focusable for keyboard users to scroll it
    <section class="table-wrap" tabIndex={0} aria-label={label}>
      {children}
    </section>
  );
}
