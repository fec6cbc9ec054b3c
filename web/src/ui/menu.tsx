import type { ComponentChildren } from "preact";
import { createPortal } from "preact/compat";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

const GAP = 4;
const MARGIN = 8;

/**
 * Where a menu of `size` goes beside the button at `anchor`: below it, or above when it
 * does not fit below; its right edge on the button's, moved in to stay on screen.
 */
export function placeMenu(anchor: DOMRect, size: { width: number; height: number }, viewport: { width: number; height: number }) {
  const below = anchor.bottom + GAP;
  const above = anchor.top - GAP - size.height;
  const top = below + size.height <= viewport.height - MARGIN || above < MARGIN ? below : above;
  const left = anchor.right - size.width;
  return {
    top: Math.max(MARGIN, Math.min(top, viewport.height - MARGIN - size.height)),
    left: Math.max(MARGIN, Math.min(left, viewport.width - MARGIN - size.width)),
  };
}

/**
 * A menu of buttons (role="menuitem") opened from `anchor`. It lives in document.body, not
 * beside its button: a windowed list moves its rows with `transform`, which would make a
 * row, not the window, what `position: fixed` is relative to (the menu then opened far from
 * its button and was cut off by the sidebar). Escape, a click elsewhere, scrolling or
 * resizing close it; arrow keys move between its items.
 */
export function Menu(props: { anchor: HTMLElement; label: string; onClose: (refocus: boolean) => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDivElement>(null);
  const [position, setPosition] = useState<{ top: number; left: number } | null>(null);

  useLayoutEffect(() => {
    const menu = ref.current!;
    setPosition(
      placeMenu(props.anchor.getBoundingClientRect(), { width: menu.offsetWidth, height: menu.offsetHeight }, {
        width: document.documentElement.clientWidth,
        height: document.documentElement.clientHeight,
      }),
    );
  }, [props.anchor]);

  // Focus moves in the same commit that shows the menu: with a later effect, a key pressed
  // as soon as the menu appeared (Escape) still went to its button and left the menu open.
  useLayoutEffect(() => {
    if (!position) return;
    ref.current?.querySelector<HTMLElement>('[role="menuitem"]')?.focus();
  }, [!!position]);

  useEffect(() => {
    const outside = (e: Event) => {
      const target = e.target as Node;
      if (ref.current?.contains(target) || props.anchor.contains(target)) return;
      props.onClose(false);
    };
    const moved = (e: Event) => !ref.current?.contains(e.target as Node) && props.onClose(false);
    const resized = () => props.onClose(false);
    document.addEventListener("mousedown", outside);
    document.addEventListener("focusin", outside);
    document.addEventListener("scroll", moved, true);
    window.addEventListener("resize", resized);
    return () => {
      document.removeEventListener("mousedown", outside);
      document.removeEventListener("focusin", outside);
      document.removeEventListener("scroll", moved, true);
      window.removeEventListener("resize", resized);
    };
  }, [props.anchor, props.onClose]);

  const onKeyDown = (e: KeyboardEvent) => {
    const items = [...(ref.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
    const at = items.indexOf(document.activeElement as HTMLElement);
    const go = (i: number) => items[(i + items.length) % items.length]?.focus();
    if (e.key === "Escape") props.onClose(true);
    else if (e.key === "ArrowDown") go(at + 1);
    else if (e.key === "ArrowUp") go(at - 1);
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(items.length - 1);
    else if (e.key === "Tab") props.onClose(false);
    else return;
    // The drawer closes on Escape too: this one is the menu's.
    if (e.key !== "Tab") e.preventDefault();
    e.stopPropagation();
  };

  return createPortal(
    <div
      ref={ref}
      class="menu"
      role="menu"
      aria-label={props.label}
      onKeyDown={onKeyDown}
      style={position ? { top: `${position.top}px`, left: `${position.left}px` } : { top: "0px", left: "0px", visibility: "hidden" }}
    >
      {props.children}
    </div>,
    document.body,
  );
}
