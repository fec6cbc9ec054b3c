import { useEffect, useRef } from "preact/hooks";
import type { Message } from "../api/client";
import { Markdown } from "../ui/markdown";

export interface ShownMessage {
  id: string;
  role: Message["role"];
  content: string;
  model?: string;
  note?: string;
  streaming?: boolean;
}

/** The conversation; scrolls to the newest text, or to `focusId` (a search hit) once. */
export function MessageList(props: {
  messages: ShownMessage[];
  focusId?: string | null;
  empty?: preact.ComponentChildren;
  before?: preact.ComponentChildren;
}) {
  const end = useRef<HTMLDivElement>(null);
  const focused = useRef<string | null>(null);
  const last = props.messages[props.messages.length - 1];
  useEffect(() => {
    if (props.focusId && focused.current !== props.focusId) {
      const target = document.getElementById(`message-${props.focusId}`);
      if (target) {
        focused.current = props.focusId;
        target.scrollIntoView({ block: "center" });
        return;
      }
    }
    if (!props.focusId) end.current?.scrollIntoView({ block: "end" });
    // Only a new or growing last message scrolls down; earlier pages added on top do not.
  }, [last?.id, last?.content, props.focusId]);

  if (props.messages.length === 0) return <div class="messages empty">{props.empty}</div>;
  return (
    <div class="messages">
      {props.before && <div class="earlier">{props.before}</div>}
      <ol class="message-items" aria-label="Conversation">
        {props.messages.map((m) => (
          <li
            key={m.id}
            id={`message-${m.id}`}
            class={`message ${m.role}${props.focusId === m.id ? " focused" : ""}`}
            aria-label={m.role === "user" ? "You said" : "Assistant replied"}
          >
            {m.role === "user" ? (
              <div class="bubble">{m.content}</div>
            ) : (
              <div class="reply" aria-busy={m.streaming ? "true" : undefined}>
                <Markdown text={m.content || (m.streaming ? "…" : "")} />
                {m.note && <p class="message-note">{m.note}</p>}
              </div>
            )}
          </li>
        ))}
      </ol>
      <div ref={end} />
    </div>
  );
}
