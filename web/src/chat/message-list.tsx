import { useEffect, useRef, useState } from "preact/hooks";
import type { Message } from "../api/client";
import { Icon } from "../ui/icons";
import { Markdown } from "../ui/markdown";
import { MessageAttachments } from "./attachment-views";
import type { Attachment } from "./attachments";

export interface ShownMessage {
  id: string;
  role: Message["role"];
  content: string;
  model?: string;
  /** The message it follows (null for a first message); absent for one not stored yet. */
  parentId?: string | null;
  /** Its versions (itself included, oldest first); absent for one not stored yet. */
  siblingIds?: string[];
  note?: string;
  streaming?: boolean;
  attachments?: Attachment[];
}

/** What a person can do with a stored message; absent while a reply streams. */
export interface MessageActions {
  /** Show another version of a message (a sibling): its branch becomes the active one. */
  showVersion(id: string): void;
  /** Send an edited user message again: a new version of it. */
  edit(message: ShownMessage, text: string): void;
  /** Ask for another reply to the message a reply answers. */
  regenerate(message: ShownMessage): void;
}

/** The conversation; scrolls to the newest text, or to `focusId` (a search hit) once. */
export function MessageList(props: {
  messages: ShownMessage[];
  focusId?: string | null;
  empty?: preact.ComponentChildren;
  before?: preact.ComponentChildren;
  actions?: MessageActions;
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
          <Item key={m.id} message={m} focused={props.focusId === m.id} actions={m.siblingIds ? props.actions : undefined} />
        ))}
      </ol>
      <div ref={end} />
    </div>
  );
}

function Item({ message: m, focused, actions }: { message: ShownMessage; focused: boolean; actions?: MessageActions }) {
  const [editing, setEditing] = useState<string | null>(null);
  const editor = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (editing !== null) editor.current?.focus();
  }, [editing !== null]);
  return (
    <li
      id={`message-${m.id}`}
      class={`message ${m.role}${focused ? " focused" : ""}`}
      aria-label={m.role === "user" ? "You said" : "Assistant replied"}
    >
      {editing !== null ? (
        <form
          class="edit-message"
          onSubmit={(e) => {
            e.preventDefault();
            if (!editing.trim()) return;
            setEditing(null);
            actions?.edit(m, editing);
          }}
        >
          <label class="visually-hidden" for={`edit-${m.id}`}>
            Edit your message
          </label>
          <textarea
            id={`edit-${m.id}`}
            rows={3}
            value={editing}
            onInput={(e) => setEditing(e.currentTarget.value)}
            onKeyDown={(e) => e.key === "Escape" && setEditing(null)}
            ref={editor}
          />
          <div class="row-actions">
            <button type="button" class="button small" onClick={() => setEditing(null)}>
              Cancel
            </button>
            <button type="submit" class="button small primary" disabled={!editing.trim()}>
              Send
            </button>
          </div>
        </form>
      ) : m.role === "user" ? (
        <div class="bubble">
          {m.attachments && <MessageAttachments attachments={m.attachments} />}
          {m.content}
        </div>
      ) : (
        <div class="reply" aria-busy={m.streaming ? "true" : undefined}>
          <Markdown text={m.content || (m.streaming ? "…" : "")} />
          {m.note && <p class="message-note">{m.note}</p>}
        </div>
      )}
      {actions && editing === null && (
        <div class="message-actions">
          <Versions message={m} show={actions.showVersion} />
          <CopyButton text={m.content} />
          {m.role === "user" ? (
            <button type="button" class="icon-button small" aria-label="Edit message" title="Edit" onClick={() => setEditing(m.content)}>
              <Icon name="edit" size={16} />
            </button>
          ) : (
            <button type="button" class="icon-button small" aria-label="Regenerate reply" title="Regenerate" onClick={() => actions.regenerate(m)}>
              <Icon name="regenerate" size={16} />
            </button>
          )}
        </div>
      )}
    </li>
  );
}

/** ‹ 2/3 ›: which version of the message this is, and the way to the others. */
function Versions({ message, show }: { message: ShownMessage; show: (id: string) => void }) {
  const ids = message.siblingIds ?? [];
  if (ids.length < 2) return null;
  const at = ids.indexOf(message.id);
  const what = message.role === "user" ? "message" : "reply";
  return (
    <div class="versions" role="group" aria-label={`Version ${at + 1} of ${ids.length}`}>
      <button type="button" class="icon-button small" aria-label={`Previous version of this ${what}`} disabled={at <= 0} onClick={() => show(ids[at - 1]!)}>
        <Icon name="left" size={16} />
      </button>
      <span aria-hidden="true">
        {at + 1}/{ids.length}
      </span>
      <button
        type="button"
        class="icon-button small"
        aria-label={`Next version of this ${what}`}
        disabled={at >= ids.length - 1}
        onClick={() => show(ids[at + 1]!)}
      >
        <Icon name="right" size={16} />
      </button>
    </div>
  );
}

function CopyButton({ text }: { text: string }) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 1500);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <button
      type="button"
      class="icon-button small"
      aria-label={copied ? "Copied" : "Copy message"}
      title={copied ? "Copied" : "Copy"}
      onClick={() => void navigator.clipboard?.writeText(text).then(() => setCopied(true))}
    >
      <Icon name={copied ? "check" : "copy"} size={16} />
    </button>
  );
}
