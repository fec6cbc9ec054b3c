import type { ComponentChildren } from "preact";

/** A page that is one card: the brand, a heading and what follows (signing in, a suspended account, an unreachable service). */
export function CardPage({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <main class="login">
      <div class="login-card">
        <div class="brand" aria-hidden="true">
          <img src="/favicon.svg" alt="" width="40" height="40" />
        </div>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}
