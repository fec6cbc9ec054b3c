import { useEffect, useRef } from "preact/hooks";

// Cloudflare Turnstile's widget, on the login screen where the server asks for it
// (/client-config `signUp.turnstileSiteKey`): a new wallet or name account needs its token,
// which the server checks with Cloudflare once. Its script comes from Cloudflare only when the
// widget is shown (the page's CSP allows that origin only where Turnstile is configured).

interface TurnstileApi {
  render(container: HTMLElement, options: Record<string, unknown>): string;
  reset(widgetId: string): void;
  remove(widgetId: string): void;
}

declare global {
  interface Window {
    turnstile?: TurnstileApi;
  }
}

const SCRIPT = "https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit";

let loading: Promise<TurnstileApi> | undefined;

function loadTurnstile(): Promise<TurnstileApi> {
  loading ??= new Promise<TurnstileApi>((resolve, reject) => {
    if (window.turnstile) return resolve(window.turnstile);
    const script = document.createElement("script");
    script.src = SCRIPT;
    script.async = true;
    script.onload = () => (window.turnstile ? resolve(window.turnstile) : reject(new Error("Cloudflare's check did not start")));
    script.onerror = () => reject(new Error("Cloudflare's check could not be loaded: check the connection, then reload this page"));
    document.head.append(script);
  }).catch((err: unknown) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

/**
 * The widget: `onToken` gets its token once the person passes, and null when it expires or
 * fails. A token serves one check: a new `round` draws a fresh widget after it was used.
 */
export function TurnstileWidget(props: { siteKey: string; round: number; onToken: (token: string | null) => void; onError: (message: string) => void }) {
  const box = useRef<HTMLDivElement>(null);
  const widget = useRef<string | undefined>(undefined);
  const handlers = useRef(props);
  handlers.current = props;

  useEffect(() => {
    let gone = false;
    loadTurnstile().then(
      (turnstile) => {
        if (gone || !box.current) return;
        widget.current = turnstile.render(box.current, {
          sitekey: props.siteKey,
          action: "sign-up",
          theme: "auto",
          callback: (token: string) => handlers.current.onToken(token),
          "expired-callback": () => handlers.current.onToken(null),
          "error-callback": () => {
            handlers.current.onToken(null);
            handlers.current.onError("Cloudflare's check that you are a person failed: try it again, or reload this page.");
          },
        });
      },
      (err: unknown) => handlers.current.onError(err instanceof Error ? err.message : String(err)),
    );
    return () => {
      gone = true;
      if (widget.current) window.turnstile?.remove(widget.current);
      widget.current = undefined;
    };
  }, [props.siteKey]);

  useEffect(() => {
    if (props.round === 0 || !widget.current) return;
    window.turnstile?.reset(widget.current);
    handlers.current.onToken(null);
  }, [props.round]);

  return <div class="turnstile" ref={box} />;
}
