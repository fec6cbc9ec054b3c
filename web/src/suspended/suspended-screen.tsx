import { useQueryClient } from "@tanstack/react-query";
import { useState } from "preact/hooks";
import { useLocation } from "wouter-preact";
import { signOut } from "../auth/session";
import { clearSuspension } from "../auth/suspension";
import { CardPage } from "../ui/card-page";

/**
 * What a suspended person sees instead of the app: that the account is suspended, the
 * operator's reason (in the server's sentence), and a way out (signing out, to another account).
 */
export function SuspendedScreen({ message }: { message: string }) {
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const [leaving, setLeaving] = useState(false);
  const leave = async () => {
    setLeaving(true);
    await signOut();
    // Nothing of this account stays cached for the next one to sign in here.
    client.clear();
    clearSuspension();
    navigate("/login", { replace: true });
  };
  return (
    <CardPage title="Your account is suspended">
      {/* Announced as it replaces the page the person was on. */}
      <p class="notice" role="alert">
        {sentence(message)}
      </p>
      <p class="muted">
        Until the service's operator lifts it, this account cannot chat, use its API keys or sign in. Its conversations are kept.
      </p>
      <button type="button" class="button wide" onClick={() => void leave()} disabled={leaving}>
        Sign out
      </button>
    </CardPage>
  );
}

/** The server's message, as a sentence: a capital first, a full stop last. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return `${trimmed.charAt(0).toUpperCase()}${trimmed.slice(1)}${/[.!?]$/.test(trimmed) ? "" : "."}`;
}
