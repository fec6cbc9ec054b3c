import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Message } from "../api/client";
import { Icon } from "../ui/icons";
import { Markdown } from "../ui/markdown";
import { usePrepared } from "../ui/prepare";
import { ReadAloudButton } from "./read-aloud";
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
  /** A stored reply's end: whole, stopped by the person, or cut off by a failure. */
  status?: "done" | "stopped" | "failed";
  rating?: "up" | "down" | null;
  attachments?: Attachment[];
}

/** What is said under a stored reply that did not end by itself (null for one that did). */
function statusNote({ status, content }: ShownMessage): string | null {
  if (status === "stopped") return content ? "Stopped. What was written so far is kept; regenerate it for a whole reply." : "Stopped before the first word. Regenerate it for a reply.";
  if (status === "failed") return content ? "The model stopped answering here. What it wrote is kept; regenerate it for a whole reply." : "The model stopped answering here, before its first word. Regenerate it to try again.";
  return null;
}

/** What a person can do with a stored message; absent while a reply streams. */
export interface MessageActions {
  /** Show another version of a message (a sibling): its branch becomes the active one. */
  showVersion(id: string): void;
  /** Send an edited user message again: a new version of it. */
  edit(message: ShownMessage, text: string): void;
  /** Ask for another reply to the message a reply answers. */
  regenerate(message: ShownMessage): void;
  /** A reply's thumbs up or down (null: neither). */
  rate(message: ShownMessage, rating: "up" | "down" | null): Promise<void>;
}

/**
 * The conversation; scrolls to the newest text, or to `focusId` (a search hit) once. A
 * conversation opened shows once its replies are rendered, off the main thread
 * (prepare.ts), all at once: nothing jumps as they come in.
 */
export function MessageList(props: {
  /** Which conversation this is (undefined: a new chat). */
  conversation: string | undefined;
  messages: ShownMessage[];
  focusId?: string | null;
  empty?: preact.ComponentChildren;
  before?: preact.ComponentChildren;
  actions?: MessageActions;
  /** The profile's language, for reading replies aloud ("" for the browser's). */
  language?: string;
}) {
  const end = useRef<HTMLDivElement>(null);
  const focused = useRef<string | null>(null);
  const last = props.messages[props.messages.length - 1];
  // Once shown, a conversation is not held back again: a reply just streamed, an edit, a
  // regenerated reply render at once. Nor is one still being written (its own first message).
  const revealed = useRef<string | undefined | null>(null);
  const holding = revealed.current !== props.conversation && props.messages.every((m) => m.siblingIds);
  const ready = usePrepared(holding ? props.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content) : []);
  if (props.messages.length > 0 && (!holding || ready)) revealed.current = props.conversation;
  const { from, controls } = useShownFromEnd(props.conversation, props.messages.length, holding && ready, !!props.focusId, end);
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
    // Only a new or growing last message scrolls down, or the conversation shown once its
    // replies are ready; earlier pages added on top do not.
  }, [last?.id, last?.content, props.focusId, holding && !ready]);

  if (props.messages.length === 0) return <div class="messages empty">{props.empty}</div>;
  if (holding && !ready) {
    return (
      <div class="messages" aria-busy="true">
        <p class="visually-hidden" role="status">
          Loading the conversation…
        </p>
      </div>
    );
  }
  return (
    <div class="messages">
      {props.before && from === 0 && <div class="earlier">{props.before}</div>}
      <ol class="message-items" aria-label="Conversation">
        {props.messages.slice(from).map((m) => (
          <Item
            key={m.id}
            message={m}
            focused={props.focusId === m.id}
            actions={m.siblingIds && controls ? props.actions : undefined}
            reserveActions={!!m.siblingIds && !!props.actions && !controls}
            language={props.language ?? ""}
          />
        ))}
      </ol>
      <div ref={end} />
    </div>
  );
}

/** How many of an opened conversation's newest messages its first render tries: the last exchange. */
const FIRST = 2;

/** An opened conversation's reveal, as it goes. */
interface Reveal {
  conversation: string | undefined;
  /** The first message shown. */
  from: number;
  /** How many messages the last part added. */
  step: number;
  /** Whether what is shown fills the view (the rest may then come above it). */
  filled: boolean;
  /** Whether the messages' controls are drawn yet. */
  controls: boolean;
}

/**
 * What of an opened conversation to show. It shows its end first: the last exchange, and more
 * before it until they fill the view (before that frame paints, so that nothing seen moves);
 * then the messages above it, twice as many each task, each time kept scrolled to the end;
 * then, a task later, the messages' controls (copy, edit, thumbs…: as many elements as the
 * text itself), in the room kept for them. What is in view is laid out and painted first, and
 * no single task renders and lays out a whole long conversation (a phone spends tens of
 * milliseconds on a reply with code and math). A search hit (`focused`) shows whole at once.
 */
function useShownFromEnd(
  conversation: string | undefined,
  count: number,
  revealing: boolean,
  focused: boolean,
  end: { current: HTMLDivElement | null },
): { from: number; controls: boolean } {
  const reveal = useRef<Reveal | null>(null);
  const [, rerender] = useState(0);
  if (revealing) {
    const from = focused ? 0 : Math.max(0, count - FIRST);
    reveal.current = { conversation, from, step: FIRST, filled: from === 0, controls: false };
  }
  const shown = reveal.current?.conversation === conversation ? reveal.current : null;
  const from = shown ? Math.min(shown.from, count) : 0;
  const controls = !shown || shown.controls;
  // A task after the frame that paints what is shown: the next part, or the controls.
  useEffect(() => {
    const r = shown;
    if (!r || r.controls || (r.from > 0 && !r.filled)) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => {
        if (r.from > 0) {
          r.step *= 2;
          r.from = Math.max(0, r.from - r.step);
        } else {
          r.controls = true;
        }
        rerender((n) => n + 1);
      });
    });
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
    // `shown` is a new object at each reveal: a reveal begun again starts its own steps.
  }, [shown, from, controls]);
  // Before the frame paints, so that what is in view never moves (no layout shift).
  useLayoutEffect(() => {
    const r = reveal.current;
    if (!r || r.conversation !== conversation || (r.from === 0 && r.step === FIRST)) return;
    const scroller = end.current?.parentElement;
    if (r.from > 0 && !r.filled && scroller) {
      if (scroller.scrollHeight > scroller.clientHeight) {
        // The view is full: the rest comes in later tasks, above what is seen.
        r.filled = true;
        end.current?.scrollIntoView({ block: "end" });
        return;
      }
      // What is shown does not fill the view yet, or it would move down as the rest comes:
      // more of it before this frame paints.
      r.step *= 2;
      r.from = Math.max(0, r.from - r.step);
      rerender((n) => n + 1);
    } else if (r.filled && !focused) {
      end.current?.scrollIntoView({ block: "end" });
    }
  }, [from]);
  return { from, controls };
}

function Item({
  message: m,
  focused,
  actions,
  reserveActions,
  language,
}: { message: ShownMessage; focused: boolean; actions?: MessageActions; reserveActions: boolean; language: string }) {
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
            onKeyDown={(e) => {
              if (e.key === "Escape") setEditing(null);
              // As in the composer: Enter sends, Shift+Enter adds a line.
              else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
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
          {m.streaming && !m.content ? <Writing /> : <Markdown text={m.content} />}
          {(m.note ?? statusNote(m)) && <p class="message-note">{m.note ?? statusNote(m)}</p>}
        </div>
      )}
      {reserveActions && <div class="message-actions" aria-hidden="true" />}
      {actions && editing === null && (
        <div class="message-actions">
          <Versions message={m} show={actions.showVersion} />
          <CopyButton text={m.content} />
          {m.role === "user" ? (
            <button type="button" class="icon-button small" aria-label="Edit message" title="Edit" onClick={() => setEditing(m.content)}>
              <Icon name="edit" size={16} />
            </button>
          ) : (
            <>
              <Thumbs message={m} rate={actions.rate} />
              <ReadAloudButton id={m.id} text={m.content} language={language} />
              <button type="button" class="icon-button small" aria-label="Regenerate reply" title="Regenerate" onClick={() => actions.regenerate(m)}>
                <Icon name="regenerate" size={16} />
              </button>
            </>
          )}
        </div>
      )}
    </li>
  );
}

/** 👍 / 👎 under a reply: pressed again, taken back. Shown at once, stored behind. */
function Thumbs({ message, rate }: { message: ShownMessage; rate: MessageActions["rate"] }) {
  const [rating, setRating] = useState(message.rating ?? null);
  const [failed, setFailed] = useState(false);
  const choose = (value: "up" | "down") => {
    const next = rating === value ? null : value;
    const before = rating;
    setRating(next);
    setFailed(false);
    rate(message, next).catch(() => {
      setRating(before);
      setFailed(true);
    });
  };
  return (
    <>
      <button type="button" class="icon-button small" aria-label="Good reply" title="Good reply" aria-pressed={rating === "up"} onClick={() => choose("up")}>
        <Icon name="thumbUp" size={16} />
      </button>
      <button type="button" class="icon-button small" aria-label="Bad reply" title="Bad reply" aria-pressed={rating === "down"} onClick={() => choose("down")}>
        <Icon name="thumbDown" size={16} />
      </button>
      {failed && (
        <span class="muted small" role="alert">
          Not saved; try again.
        </span>
      )}
    </>
  );
}

/** Before the first word of a reply: three dots that pulse, and words for a screen reader. */
function Writing() {
  return (
    <p class="writing" role="status">
      <span class="writing-dots" aria-hidden="true">
        <span />
        <span />
        <span />
      </span>
      <span class="visually-hidden">The assistant is writing a reply</span>
    </p>
  );
}

/** ‹ 2/3 ›: which version of the message this is, and the way to the others. */
function Versions({ message, show }: { message: ShownMessage; show: (id: string) => void }) {
  const ids = message.siblingIds ?? [];
  if (ids.length < 2) return null;
  const at = ids.indexOf(message.id);
  const what = message.role === "user" ? "message" : "reply";
  return (
    // biome-ignore lint/a11y/useSemanticElements: two buttons grouped under one label, not a form's fieldset
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
