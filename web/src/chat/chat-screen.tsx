import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { useLocation, useSearch } from "wouter-preact";
import { ApiError, api, must } from "../api/client";
import { useClientConfig } from "../api/client-config";
import { useProfile } from "../settings/profile-query";
import { Icon } from "../ui/icons";
import { formatDuration } from "../ui/time";
import { useNow } from "../ui/use-now";
import { contextKey, conversationQuery } from "./conversation-query";
import { creditsKey, updateCredits, useCredits } from "./credits";
import { readDraft, writeDraft } from "./draft";
import { InstructionsDialog } from "./instructions-dialog";
import { MessageList, type MessageActions, type ShownMessage } from "./message-list";
import { ModelHint, ModelPicker, useModels } from "./model-picker";
import { modelsKey } from "./models-query";
import { followReply, rateReply, regenerateReply, sendMessage, stopReply, type DoneEvent, type StartedEvent } from "./send-message";
import { VoiceButton } from "./voice-button";
import { warmPreparer } from "../ui/prepare";
import { DraftChips } from "./attachment-views";
import { useDrafts } from "./attachments";

interface Pending {
  /**
   * Where the exchange hangs in the conversation: the stored messages are shown up to this
   * one (null: none of them, a new first message), then the pending ones; undefined: all.
   */
  after: string | null | undefined;
  /** The message sent; null when a reply is regenerated (its message is stored). */
  user: string | null;
  assistant: string;
  state: "streaming" | "stopping" | "done";
  contextId: string | undefined;
  /** The running reply, once the server said it started (the `started` event, or GET /contexts/{id}'s `running`). */
  replyId?: string;
}

/** A reply still being written on the server, as GET /contexts/{id} tells it. */
type Running = { replyId: string; parentId: string; model: string; text: string };

type Failure =
  | { kind: "credits"; message: string }
  | { kind: "retry"; message: string; retry: () => void }
  | { kind: "images"; message: string; switchTo: { id: string; name: string } | undefined; retry: (model: string) => void }
  | { kind: "plain"; message: string };

/** What a charged exchange asks for: a message sent (from the composer or an edit), or a reply regenerated. */
type Exchange =
  | { kind: "send"; message: string; parentId?: string | null; fromComposer: boolean; attachments?: string[] }
  | { kind: "regenerate"; reply: ShownMessage };


/** A conversation (or a new one at `/`): messages, the composer, the model picker. */
export function ChatScreen({ contextId }: { contextId: string | undefined }) {
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const focusId = new URLSearchParams(useSearch()).get("m");
  const profile = useProfile();
  const models = useModels();
  const credits = useCredits();
  const clientConfig = useClientConfig();

  const context = useInfiniteQuery(conversationQuery(contextId, focusId));
  const conversation = context.data?.pages[0];
  const loaded = context.data ? [...context.data.pages].reverse().flatMap((p) => p.messages) : [];

  const [text, setText] = useState(() => readDraft(contextId));
  const [model, setModel] = useState<string | null>(null);
  const files = useDrafts();
  const fileInput = useRef<HTMLInputElement>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [failure, setFailure] = useState<Failure | null>(null);
  const [voiceError, setVoiceError] = useState<string | null>(null);
  const [editingInstructions, setEditingInstructions] = useState(false);
  // A new chat's instructions, sent with its first message: from a preset (`?preset=`) or typed.
  const presetName = new URLSearchParams(useSearch()).get("preset");
  const [newInstructions, setNewInstructions] = useState<string | null>(null);
  useEffect(() => {
    const preset = profile.data?.presets.find((p) => p.name === presetName);
    if (!contextId && preset) setNewInstructions(preset.instructions);
  }, [presetName, contextId, !!profile.data]);
  const abort = useRef<AbortController | null>(null);
  /** The conversation a reply is being written in, to read again when it is left. */
  const leaving = useRef<string | undefined>(undefined);
  const ownNavigation = useRef<string | null>(null);
  /** Enter was pressed while the last reply was settling: send the composer once it has. */
  const sendWhenSettled = useRef(false);
  const input = useRef<HTMLTextAreaElement>(null);

  // Another conversation was opened: stop what streams here and show that one's draft.
  useEffect(() => {
    if (ownNavigation.current === contextId) {
      ownNavigation.current = null;
      return;
    }
    // A reply being written goes on on the server (the exchange was sent in the background):
    // its conversation is read afresh when opened again, and follows the reply from there.
    abort.current?.abort();
    if (leaving.current) void client.invalidateQueries({ queryKey: contextKey(leaving.current) });
    sendWhenSettled.current = false;
    setPending(null);
    setFailure(null);
    if (contextId) setNewInstructions(null);
    setText(readDraft(contextId));
    input.current?.focus();
  }, [contextId]);

  // A conversation's replies are rendered by a worker: it starts loading while they do.
  useEffect(() => {
    if (contextId) warmPreparer();
  }, [contextId]);

  // A search hit further back than what is loaded: go back page by page until it is there.
  useEffect(() => {
    if (!focusId || !context.data || loaded.some((m) => m.id === focusId)) return;
    if (context.hasNextPage && !context.isFetchingNextPage) void context.fetchNextPage();
  }, [focusId, context.data, context.hasNextPage, context.isFetchingNextPage]);

  const serverDefault = models.data?.find((m) => m.default)?.id;
  const known = (id: string | undefined) => (id && (!models.data || models.data.some((m) => m.id === id)) ? id : undefined);
  // A preference or an old reply may name a model this server no longer offers: the server's default then.
  const defaultModel = known(profile.data?.preferences.defaultModel) ?? serverDefault ?? "svc-70b";
  const lastModel = known(loaded.findLast((m) => m.role === "assistant")?.model);
  const chosen = model ?? lastModel ?? defaultModel;
  const chosenModel = models.data?.find((m) => m.id === chosen);
  // No model can answer at all: the setup card instead of a composer that cannot work.
  const noModel = models.data !== undefined && !models.data.some((m) => m.available);
  const modelUnavailable = !noModel && chosenModel !== undefined && !chosenModel.available;
  const outOfCredits = credits.data?.remaining === 0;
  const streaming = pending?.state === "streaming" || pending?.state === "stopping";
  leaving.current = pending?.contextId;

  // A reply still being written (sent from another tab, or before this chat was left): shown
  // as it goes on, then as stored.
  const running = (conversation?.running ?? null) as Running | null;
  useEffect(() => {
    if (contextId && running && !pending) void follow(contextId, running);
  }, [contextId, running?.replyId, pending === null]);
  // The reply is complete and stored; the conversation is being read again to show it.
  const settling = pending?.state === "done";

  // The composer grows with its text up to 240 px and shrinks with it: when a message is sent
  // (its text leaves), a draft comes back, another conversation's draft shows.
  // Empty, it is one line by its CSS: measuring (scrollHeight) would make the browser lay out
  // the whole page in the middle of rendering it.
  useLayoutEffect(() => {
    const box = input.current;
    if (!box) return;
    box.style.height = "";
    if (text) box.style.height = `${Math.min(box.scrollHeight, 240)}px`;
  }, [text]);

  function edit(value: string) {
    setText(value);
    writeDraft(contextId, value);
  }

  /**
   * Runs a charged exchange with a fresh Idempotency-Key (or, retrying after a network
   * failure, the same one, so it cannot be charged twice) and streams its reply in place.
   */
  async function run(exchange: Exchange, retryKey: string | null = null, modelId: string = chosen) {
    if (streaming || outOfCredits || noModel || modelUnavailable) return;
    if (exchange.kind === "send" && !exchange.message.trim()) return;
    const idempotencyKey = retryKey ?? crypto.randomUUID();
    const controller = new AbortController();
    abort.current = controller;
    const sentFrom = contextId;
    /** Once the server has stored the question (the `started` event), and what the reply holds so far. */
    let started: StartedEvent | null = null;
    let written = "";
    setFailure(null);
    setPending(
      exchange.kind === "send"
        ? { after: exchange.parentId, user: exchange.message, assistant: "", state: "streaming", contextId: sentFrom }
        : { after: exchange.reply.parentId, user: null, assistant: "", state: "streaming", contextId: sentFrom },
    );
    if (exchange.kind === "send" && exchange.fromComposer) edit("");
    const options = {
      idempotencyKey,
      signal: controller.signal,
      onDelta: (delta: string) => {
        written += delta;
        setPending((p) => (p ? { ...p, assistant: p.assistant + delta } : p));
      },
      onStarted: (event: StartedEvent) => {
        started = event;
        // Stored: the conversation exists, and the reply can be stopped or followed again.
        setPending((p) => (p ? { ...p, replyId: event.replyId, contextId: event.contextId, ...(sentFrom ? {} : { after: null }) } : p));
        void client.invalidateQueries({ queryKey: ["contexts"] });
        if (!sentFrom) {
          ownNavigation.current = event.contextId;
          navigate(`/c/${event.contextId}`);
        }
      },
    };
    try {
      let done: DoneEvent;
      if (exchange.kind === "regenerate") done = await regenerateReply(sentFrom!, exchange.reply.id, { model: modelId }, options);
      else {
        // The branch on screen is the one continued, whatever another tab made active.
        const parent = exchange.parentId !== undefined ? { parentId: exchange.parentId } : {};
        const place = sentFrom ? { contextId: sentFrom, ...parent } : newInstructions ? { instructions: newInstructions } : {};
        const attached = exchange.attachments?.length ? { attachments: exchange.attachments } : {};
        done = await sendMessage({ message: exchange.message, model: modelId, ...place, ...attached }, options);
        if (exchange.fromComposer) files.clear();
      }
      // The reply is whole: Send is back at once (a message sent now waits for the reload below).
      setPending((p) => (p && p.state === "streaming" ? { ...p, state: "done" } : p));
      updateCredits(client, done.credits);
      void client.invalidateQueries({ queryKey: ["contexts"] });
      if (!sentFrom) watchForTitle(done.contextId);
      else if (focusId) {
        // The new reply is on the active branch: show that, not the search hit's.
        navigate(`/c/${done.contextId}`, { replace: true });
      }
      await client.refetchQueries({ queryKey: contextKey(done.contextId) });
      setPending((p) => (p && p.state === "done" ? null : p));
    } catch (err) {
      // Stopped (see stop), or another conversation opened: the reply is the server's now.
      if (controller.signal.aborted) return;
      const status = err instanceof ApiError ? err.status : 0;
      const known = started as StartedEvent | null;
      if (known) return afterStarted(known, written, status, err);
      // Nothing is lost: a message from the composer goes back into it (and its saved draft).
      if (exchange.kind === "send" && exchange.fromComposer) {
        writeDraft(sentFrom, exchange.message);
        setText(exchange.message);
      }
      setPending(null);
      const reason = err instanceof Error ? err.message : String(err);
      if (status === 401) return;
      if (status === 400 && /does not take images/.test(reason) && exchange.kind === "send") {
        const seeing = models.data?.find((m) => m.available && m.images);
        setModel(chosen);
        setFailure({
          kind: "images",
          message: `${chosenModel?.name ?? chosen} cannot see images. Nothing was charged.`,
          switchTo: seeing && { id: seeing.id, name: seeing.name },
          retry: (id) => {
            setModel(id);
            void run({ ...exchange, fromComposer: false }, null, id);
            files.clear();
          },
        });
      } else if (status === 402) {
        void client.invalidateQueries({ queryKey: creditsKey });
        setFailure({ kind: "credits", message: reason });
      } else if (status === 503) {
        void client.invalidateQueries({ queryKey: modelsKey });
        const others = models.data?.some((m) => m.available && m.id !== chosen);
        setFailure({ kind: "plain", message: `This model is not available right now: ${reason}.${others ? " Choose another model." : ""}` });
      } else if (status === 502 || status === 504 || status === 0) {
        const what = status === 504 ? "The model took too long to answer" : status === 0 ? "The connection failed" : "The model failed to answer";
        // A network failure may have reached the server: retrying with the same key cannot charge twice.
        const again = { ...exchange, ...(exchange.kind === "send" ? { fromComposer: false } : {}) } as Exchange;
        setFailure({ kind: "retry", message: `${what}. Nothing was charged.`, retry: () => void run(again, status === 0 ? idempotencyKey : null) });
      } else {
        setFailure({ kind: "plain", message: reason });
      }
    }
  }

  /**
   * An exchange that failed once its question was stored: a connection that broke follows the
   * reply on (it goes on on the server); a model that failed is shown as stored, with the
   * reason, and can be regenerated from there.
   */
  async function afterStarted(started: StartedEvent, written: string, status: number, err: unknown) {
    if (status === 0) {
      setPending(null);
      return follow(started.contextId, { replyId: started.replyId, parentId: started.messageId, model: chosen, text: written });
    }
    void client.invalidateQueries({ queryKey: creditsKey });
    await client.refetchQueries({ queryKey: contextKey(started.contextId) });
    setPending(null);
    replyFailed({ id: started.replyId, role: "assistant", content: written, parentId: started.messageId }, status, err);
  }

  /**
   * Says why a stored reply failed. A model's failure (502, 504) is refunded and the reply
   * stays as far as it got: Retry regenerates it.
   */
  function replyFailed(reply: ShownMessage, status: number, err: unknown) {
    if (status === 401) return;
    if (status === 502 || status === 504) {
      const what = status === 504 ? "The model took too long to answer" : "The model failed to answer";
      setFailure({ kind: "retry", message: `${what}. Nothing was charged.`, retry: () => void latest.current.run({ kind: "regenerate", reply }) });
    } else setFailure({ kind: "plain", message: err instanceof Error ? err.message : String(err) });
  }

  /** Shows a reply the server is still writing, from what it holds, and follows it to its end. */
  async function follow(id: string, reply: Running) {
    const controller = new AbortController();
    abort.current = controller;
    setFailure(null);
    setPending({ after: reply.parentId, user: null, assistant: reply.text, state: "streaming", contextId: id, replyId: reply.replyId });
    let written = reply.text;
    const onDelta = (delta: string) => {
      written += delta;
      setPending((p) => (p ? { ...p, assistant: p.assistant + delta } : p));
    };
    try {
      await followReply(id, reply.replyId, reply.text.length, { signal: controller.signal, onDelta });
    } catch (err) {
      if (controller.signal.aborted) return;
      replyFailed({ id: reply.replyId, role: "assistant", content: written, parentId: reply.parentId }, err instanceof ApiError ? err.status : 0, err);
    }
    setPending((p) => (p && p.state === "streaming" ? { ...p, state: "done" } : p));
    void client.invalidateQueries({ queryKey: creditsKey });
    void client.invalidateQueries({ queryKey: ["contexts"] });
    await client.refetchQueries({ queryKey: contextKey(id) });
    setPending((p) => (p && p.state === "done" ? null : p));
  }

  /**
   * Stop: the reply ends where it is, and is kept with the question (POST …/stop); the
   * conversation is read again to show it as stored, with a note where it ends.
   */
  async function stop() {
    const current = pending;
    abort.current?.abort();
    if (!current?.replyId || !current.contextId) {
      setPending(null);
      return;
    }
    setPending({ ...current, state: "stopping" });
    try {
      await stopReply(current.contextId, current.replyId);
    } catch (err) {
      setFailure({ kind: "plain", message: err instanceof Error ? err.message : String(err) });
    }
    void client.invalidateQueries({ queryKey: creditsKey });
    void client.invalidateQueries({ queryKey: ["contexts"] });
    await client.refetchQueries({ queryKey: contextKey(current.contextId) });
    setPending((p) => (p?.replyId === current.replyId ? null : p));
  }

  // A Retry made by an earlier render runs with this one's conversation (a new chat's own id).
  const latest = useRef({ run });
  latest.current.run = run;

  const send = (message: string) => {
    // The last reply is stored but not shown from the server yet: its id is not known to
    // continue from. The message goes once it is (the effect below), as the person typed it.
    if (settling) {
      sendWhenSettled.current = true;
      return;
    }
    if (files.uploading) return;
    const attachments = files.ids.length > 0 ? { attachments: files.ids } : {};
    return run({ kind: "send", message, fromComposer: true, ...attachments, ...(contextId && loaded.length > 0 ? { parentId: loaded.at(-1)!.id } : {}) });
  };
  useEffect(() => {
    if (pending !== null || !sendWhenSettled.current) return;
    sendWhenSettled.current = false;
    void send(text);
  });

  /**
   * The model names a new conversation after its first reply, a moment later: the lists
   * are asked again until the name changes (or a few tries have passed).
   */
  function watchForTitle(id: string) {
    let tries = 0;
    const check = () => {
      const before = client.getQueriesData<{ pages: Array<{ nameSource: string }> }>({ queryKey: contextKey(id) })[0]?.[1];
      if (before?.pages[0]?.nameSource !== "message" || tries++ >= 4) return;
      void client.invalidateQueries({ queryKey: contextKey(id) });
      void client.invalidateQueries({ queryKey: ["contexts"] });
      setTimeout(check, 1000 * tries);
    };
    setTimeout(check, 800);
  }

  const versions = useMutation({
    mutationFn: (leafId: string) => must(api.PATCH("/contexts/{id}", { params: { path: { id: contextId! } }, body: { leafId } })),
    onSuccess: async () => {
      if (focusId) navigate(`/c/${contextId}`, { replace: true });
      await client.invalidateQueries({ queryKey: contextKey(contextId!) });
    },
  });
  const settings = useMutation({
    mutationFn: (patch: { instructions?: string | null; archived?: boolean }) =>
      must(api.PATCH("/contexts/{id}", { params: { path: { id: contextId! } }, body: patch })),
    onSuccess: async () => {
      setEditingInstructions(false);
      await client.invalidateQueries({ queryKey: contextKey(contextId!) });
      void client.invalidateQueries({ queryKey: ["contexts"] });
    },
  });
  const actions: MessageActions | undefined =
    streaming || !contextId
      ? undefined
      : {
          showVersion: (id) => versions.mutate(id),
          edit: (m, edited) => void run({ kind: "send", message: edited, parentId: m.parentId ?? null, fromComposer: false }),
          regenerate: (m) => void run({ kind: "regenerate", reply: m }),
          rate: (m, rating) => rateReply(contextId, m.id, rating),
        };

  let shown: ShownMessage[] = contextId ? [...loaded] : [];
  if (pending && pending.contextId === contextId) {
    if (pending.after !== undefined) shown = pending.after === null ? [] : shown.slice(0, shown.findIndex((m) => m.id === pending.after) + 1);
    if (pending.user !== null) shown.push({ id: "pending-user", role: "user", content: pending.user });
    shown.push({
      id: "pending-reply",
      role: "assistant",
      content: pending.assistant,
      streaming: pending.state === "streaming",
      note: pending.state === "stopping" ? "Stopping…" : undefined,
    });
  }

  const resetAt = credits.data?.resetAt;
  const disabledReason = outOfCredits ? (
    <>
      You have used all {credits.data?.allowance} credits for today. They come back in <Countdown to={resetAt} /> (00:00 UTC).
    </>
  ) : modelUnavailable ? (
    <>
      {chosenModel!.name} is not available on this server (its provider is not configured{chosenModel!.setup ? `: ${chosenModel!.setup}` : ""}). Choose another
      model.
    </>
  ) : null;
  const cannotSend = outOfCredits || noModel || modelUnavailable;
  const voiceOn = profile.data?.preferences.voiceInput !== false;
  const instructions = contextId ? (conversation?.instructions ?? null) : newInstructions;
  const usingPreset = !contextId && newInstructions !== null ? profile.data?.presets.find((p) => p.instructions === newInstructions)?.name : undefined;

  return (
    <section class="chat" aria-label={conversation?.name ?? "New chat"}>
      {conversation?.archived && (
        <div role="status" class="notice banner archived-banner">
          <span>This conversation is archived: it is not in the navigator or its search.</span>
          <button type="button" class="button small" onClick={() => settings.mutate({ archived: false })} disabled={settings.isPending}>
            Restore
          </button>
        </div>
      )}
      {versions.isError && (
        <p role="alert" class="error banner">
          {versions.error.message}
        </p>
      )}
      {contextId && context.isError && (
        <p role="alert" class="error banner">
          {context.error instanceof ApiError && context.error.status === 404
            ? "This conversation does not exist, or it was deleted."
            : context.error.message}
        </p>
      )}
      <MessageList
        conversation={contextId}
        language={profile.data?.preferences.language ?? ""}
        before={
          context.hasNextPage ? (
            <button type="button" class="button small" onClick={() => void context.fetchNextPage()} disabled={context.isFetchingNextPage}>
              Show earlier messages
            </button>
          ) : null
        }
        messages={shown}
        focusId={focusId}
        actions={versions.isPending ? undefined : actions}
        empty={
          contextId || noModel ? null : (
            <div class="welcome">
              <h1>What can I help with?</h1>
              <p class="muted">Your conversations are saved and searchable from the sidebar.</p>
              {usingPreset && <p class="muted">Starting from your preset “{usingPreset}”.</p>}
            </div>
          )
        }
      />
      <div class="composer-area">
        {failure && (
          <div role="alert" class="error banner">
            {failure.kind === "credits" ? (
              <span>
                {failure.message} Credits come back in <Countdown to={resetAt} />.
              </span>
            ) : (
              <span>{failure.message}</span>
            )}
            {failure.kind === "images" && failure.switchTo && (
              <button type="button" class="button small" onClick={() => failure.retry(failure.switchTo!.id)}>
                Send to {failure.switchTo.name}
              </button>
            )}
            {failure.kind === "retry" && (
              <button type="button" class="button small" onClick={failure.retry}>
                Retry
              </button>
            )}
          </div>
        )}
        {voiceError && (
          <p role="alert" class="error banner">
            {voiceError}
          </p>
        )}
        {noModel && <SetupCard local={clientConfig.data?.auth.mode === "local"} />}
        {disabledReason && (
          <p class="notice banner" role="status" id="composer-reason">
            {disabledReason}
          </p>
        )}
        <form
          class="composer"
          onSubmit={(e) => {
            e.preventDefault();
            void send(text);
          }}
          onDragOver={(e) => {
            if (e.dataTransfer?.types.includes("Files")) e.preventDefault();
          }}
          onDrop={(e) => {
            if (!e.dataTransfer?.files.length) return;
            e.preventDefault();
            files.add(e.dataTransfer.files);
          }}
        >
          <DraftChips drafts={files.drafts} remove={files.remove} />
          <label class="visually-hidden" for="composer-input">
            Message
          </label>
          <textarea
            id="composer-input"
            ref={input}
            rows={1}
            placeholder={outOfCredits ? "Out of credits until 00:00 UTC" : noModel ? "Chat is not available yet" : "Message the assistant"}
            value={text}
            disabled={outOfCredits || noModel}
            aria-describedby={disabledReason ? "composer-reason" : noModel ? "setup-card" : undefined}
            onInput={(e) => edit(e.currentTarget.value)}
            onPaste={(e) => {
              const pasted = [...(e.clipboardData?.files ?? [])];
              if (pasted.length === 0) return;
              e.preventDefault();
              files.add(pasted);
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                void send(text);
              }
            }}
          />
          <div class="composer-bar">
            <div class="composer-settings">
              <ModelPicker value={chosen} onChange={setModel} />
              <button
                type="button"
                class={`chip${instructions ? " on" : ""}`}
                aria-label={instructions ? "Instructions (set)" : "Instructions"}
                onClick={() => {
                  settings.reset();
                  setEditingInstructions(true);
                }}
              >
                <Icon name="note" size={14} /> <span class="chip-label">Instructions</span>
                {instructions && <span class="chip-dot" aria-hidden="true" />}
              </button>
              <ModelHint model={chosenModel} />
            </div>
            <div class="composer-actions">
              <input
                ref={fileInput}
                type="file"
                multiple
                hidden
                accept="image/png,image/jpeg,image/webp,image/gif,application/pdf,text/*,.md,.csv,.json"
                onChange={(e) => {
                  if (e.currentTarget.files) files.add(e.currentTarget.files);
                  e.currentTarget.value = "";
                }}
              />
              <button type="button" class="icon-button" aria-label="Attach files" title="Attach files" disabled={cannotSend} onClick={() => fileInput.current?.click()}>
                <Icon name="paperclip" />
              </button>
              {voiceOn && !cannotSend && (
                <VoiceButton
                  language={profile.data?.preferences.language ?? ""}
                  onError={(m) => setVoiceError(m)}
                  onTranscript={(t) => {
                    setVoiceError(null);
                    edit(text ? `${text} ${t}` : t);
                    input.current?.focus();
                  }}
                />
              )}
              {streaming ? (
                <button type="button" class="icon-button primary" aria-label="Stop" disabled={pending?.state === "stopping"} onClick={() => void stop()}>
                  <Icon name="stop" />
                </button>
              ) : (
                <button type="submit" class="icon-button primary" aria-label="Send" disabled={cannotSend || !text.trim() || files.uploading}>
                  <Icon name="send" />
                </button>
              )}
            </div>
          </div>
        </form>
        <p class="fineprint">Enter sends, Shift+Enter adds a line. Replies come from language models and can be wrong.</p>
      </div>
      {editingInstructions && (
        <InstructionsDialog
          value={instructions}
          presets={profile.data?.presets ?? []}
          newChat={!contextId}
          saving={settings.isPending}
          error={settings.error?.message ?? null}
          onClose={() => setEditingInstructions(false)}
          onSave={(value) => {
            if (contextId) settings.mutate({ instructions: value });
            else {
              setNewInstructions(value);
              setEditingInstructions(false);
            }
          }}
        />
      )}
    </section>
  );
}

/**
 * What to do when no model can answer: in local mode, words for the operator (this is their
 * own server); on a deployed service, that chat is not available yet.
 */
function SetupCard({ local }: { local: boolean }) {
  if (!local) {
    return (
      <section class="setup-card" id="setup-card" aria-labelledby="setup-title">
        <h2 id="setup-title">Chat is not available yet</h2>
        <p>No language model is connected to this service yet. The people who run it can see this too; please come back later.</p>
      </section>
    );
  }
  return (
    <section class="setup-card" id="setup-card" aria-labelledby="setup-title">
      <h2 id="setup-title">Connect a model to start chatting</h2>
      <p>This server has no language model yet. The quickest way is Ollama on this computer: install it from ollama.com, then run</p>
      <pre>
        <code>ollama pull llama3.2</code>
      </pre>
      <p>
        The server looks for Ollama at <code>http://127.0.0.1:11434</code> (set <code>OLLAMA_BASE_URL</code> to change it) every 30 seconds, and this
        page notices by itself.
      </p>
      <p>
        Or restart the server with <code>SVC_MODEL_BASE_URL</code> set to any OpenAI-compatible server (vLLM, llama.cpp: its address ending in{" "}
        <code>/v1</code>), or with <code>MODELS</code> listing your models (docs/chat.md shows how).
      </p>
    </section>
  );
}

/** Ticks by itself, so the rest of the chat does not re-render every second. */
function Countdown({ to }: { to: string | undefined }) {
  const now = useNow(1000);
  return <>{to ? formatDuration(new Date(to).getTime() - now) : ""}</>;
}
