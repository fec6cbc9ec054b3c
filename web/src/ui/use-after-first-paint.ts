import { useEffect, useState } from "preact/hooks";

/**
 * False at first, true from the task after the first paint: for what can come a moment
 * later (the navigator's list), so that the first task a page runs stays short on a phone.
 */
export function useAfterFirstPaint(): boolean {
  const [later, setLater] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setLater(true), 0);
    return () => clearTimeout(timer);
  }, []);
  return later;
}
