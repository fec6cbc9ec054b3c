import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter-preact";
import { ApiError } from "../api/client";
import { useEffect } from "preact/hooks";
import "../chat/attachments.css";
import { SharedAttachments } from "./shared-attachments";
import { sharedQuery } from "./shared-query";
import { Loading } from "../ui/loading";
import { Markdown } from "../ui/markdown";
import { usePrepared, warmPreparer } from "../ui/prepare";
import { plainText } from "../ui/plain-text";
import { formatDateTime } from "../ui/time";

/** /s/:token: a shared conversation, readable by anyone, no login. */
export function SharePage({ token }: { token: string }) {
  const shared = useQuery(sharedQuery(token));
  // Its replies and dates are made ready by a worker (prepare.ts), loading while the snapshot does.
  useEffect(() => warmPreparer(), []);
  const ready = usePrepared(shared.data?.messages.filter((m) => m.role !== "user").map((m) => m.content) ?? [], shared.data ? [shared.data.sharedAt, shared.data.expiresAt ?? ""].filter(Boolean) : []);
  if (shared.isPending || (shared.data && !ready)) {
    return (
      <main class="share-page">
        <Loading />
      </main>
    );
  }
  if (shared.isError) {
    const gone = shared.error instanceof ApiError && shared.error.status === 404;
    return (
      <main class="share-page">
        <div class="login-card">
          <h1>{gone ? "This conversation is no longer shared" : "This shared conversation could not be loaded"}</h1>
          <p class="muted">{gone ? "The link was revoked, it expired, or it never existed." : shared.error.message}</p>
          <Link href="/" class="button primary">
            Open Assistant Chat
          </Link>
        </div>
      </main>
    );
  }
  const data = shared.data;
  return (
    <main class="share-page">
      <header class="share-header">
        <h1>{plainText(data.name)}</h1>
        <p class="muted">
          Shared {formatDateTime(data.sharedAt)}
          {data.expiresAt ? ` · link expires ${formatDateTime(data.expiresAt)}` : ""}
        </p>
      </header>
      <ol class="message-items" aria-label="Conversation">
        {data.messages.map((m, i) => (
          <li key={i} class={`message ${m.role}`} aria-label={m.role === "user" ? "User said" : "Assistant replied"}>
            {m.role === "user" ? (
              <div class="bubble">
                {m.attachments && <SharedAttachments token={token} attachments={m.attachments} />}
                {m.content}
              </div>
            ) : (
              <div class="reply">
                <Markdown text={m.content} />
              </div>
            )}
          </li>
        ))}
      </ol>
      <footer class="share-footer muted">
        A read-only snapshot from <Link href="/">Assistant Chat</Link>.
      </footer>
    </main>
  );
}
