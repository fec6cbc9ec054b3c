import { textOf, UpstreamError, type ChatMessage, type ModelOutcome, type ModelRequest, type StreamPiece, type ToolCallDelta } from "../../platform/models/adapter";
import type { RegisteredModel } from "../../platform/models/registry";
import { createDeadline, type Deadline } from "./deadline";
import type { ExchangeTiming } from "./model-speed";
import { replyCap } from "./reply-cap";
import type { Deps } from "../../platform/deps";
import { estimateTokens, messageTokens } from "../../platform/models/tokens";

// ---------------------------------------------------------------------------------------
// Calling the model: the one asked for, then (when its provider fails before the first
// token) each fallback in turn, each within a deadline that restarts whenever the upstream
// makes progress. Yields the reply as it comes and returns it whole. Knows models, not
// credits: the exchange (exchange.ts) owns the charge around this call.
// ---------------------------------------------------------------------------------------

/** Sampling settings, tools and response format for the model (the /v1 surface's). */
export type ModelCallOptions = Pick<ModelRequest, "sampling" | "tools" | "toolChoice" | "parallelToolCalls" | "responseFormat">;

export interface ModelCall {
  /** The model asked for, then the fallbacks that may answer in its place. */
  chain: RegisteredModel[];
  /** What the model receives. */
  prompt: ChatMessage[];
  /** Aborts the call: the client went away, or asked to stop. */
  signal: AbortSignal;
  /** Streamed piece by piece, or asked for whole. */
  stream: boolean;
  options?: ModelCallOptions;
  /** The exchange's time (the user message's), which the timing row carries. */
  at: Date;
  requestId: string;
}

type CallDeps = Pick<Deps, "config" | "log" | "metrics">;

/** What a model call yields while it runs: the answering model once it has begun, then its reply in pieces. */
export type ModelEvent = { type: "started"; model: string } | { type: "delta"; text: string } | { type: "tool-call"; call: ToolCallDelta };

/** The model's whole reply. */
export interface ModelAnswer {
  text: string;
  /** The model that answered: the one asked for, or a fallback. */
  model: RegisteredModel;
  /** How the reply ended, its tool calls and token counts, as far as the provider said. */
  outcome: ModelOutcome;
  timing: ExchangeTiming;
  /** Tokens in and out: the provider's counts, else estimates. */
  tokens: { input: number; output: number; estimated: boolean };
  /** Stopped by the person (ReplyStopped) before its end: `text` is what was written. */
  stopped: boolean;
}

/** Why a model call ended without a reply, in the terms the exchange turns into an error. */
export class ModelCallFailed extends Error {
  constructor(
    readonly why: "timeout" | "cancelled" | "credentials" | "failed",
    readonly answering: RegisteredModel,
    options: { cause: unknown },
  ) {
    super(`model ${answering.id}: ${why}`, options);
  }
}

/**
 * Calls the chain's models until one begins its reply, yields it (`started`, then the
 * pieces), and returns it whole. Throws ModelCallFailed. Stopping the iteration early
 * aborts the upstream call.
 */
export async function* callModel(deps: CallDeps, call: ModelCall): AsyncGenerator<ModelEvent, ModelAnswer, undefined> {
  let outcome: ModelOutcome = {};
  const request = { ...call.options, messages: call.prompt, onOutcome: (o: ModelOutcome) => void (outcome = o) };
  const startedAt = performance.now();
  const cap = replyCap(deps.config.MAX_REPLY_CHARS);
  let begun: Begun;
  try {
    begun = await begin(deps, call, request, cap);
  } catch (err) {
    // Stopped before the first word: an empty reply, which is kept, uncharged.
    if (stopped(call.signal)) return wholeAnswer(call, { text: "", model: call.chain[0]!, outcome, startedAt, firstTokenAt: null, stopped: true });
    throw err;
  }
  const { model, deadline } = begun;
  let finished = false;
  let text = begun.text;
  let firstTokenAt: number | null = null;
  try {
    if (begun.pieces) {
      firstTokenAt = performance.now();
      deps.metrics.firstToken(model.id, (firstTokenAt - begun.startedAt) / 1000);
      yield { type: "started", model: model.id };
      for (let next = begun.first!; !next.done; next = await begun.pieces.next()) {
        deadline.touch();
        const piece = next.value;
        if (typeof piece !== "string") {
          yield { type: "tool-call", call: piece.toolCall };
          continue;
        }
        const delta = cap.take(fromModel(piece));
        text += delta;
        yield { type: "delta", text: delta };
        if (cap.cut) {
          // MAX_REPLY_CHARS: the rest is not read; the model's call ends here.
          deadline.stop(new DOMException("the reply reached MAX_REPLY_CHARS", "AbortError"));
          void begun.pieces.return?.(undefined)?.catch(() => {});
          break;
        }
      }
    }
    finished = true;
    return wholeAnswer(call, { text, model, outcome, startedAt: begun.startedAt, firstTokenAt, stopped: false });
  } catch (err) {
    // Stopped by the person: what the model wrote so far is the reply.
    if (stopped(call.signal)) {
      finished = true;
      return wholeAnswer(call, { text, model, outcome, startedAt: begun.startedAt, firstTokenAt, stopped: true });
    }
    countUpstreamError(deps, model, err, deadline);
    throw failure(err, deadline, model);
  } finally {
    deadline.clear();
    // Stopped when the caller stops reading, so the upstream call ends with it; once the
    // model has answered there is nothing left to stop.
    if (!finished) deadline.stop(new DOMException("the caller stopped reading the reply", "AbortError"));
  }
}

/** The reason a reply's signal aborts with when the person stops it: what was written is kept. */
export class ReplyStopped extends Error {
  override name = "ReplyStopped";
  constructor() {
    super("the reply was stopped");
  }
}

const stopped = (signal: AbortSignal) => signal.aborted && signal.reason instanceof ReplyStopped;

function wholeAnswer(
  call: ModelCall,
  at: { text: string; model: RegisteredModel; outcome: ModelOutcome; startedAt: number; firstTokenAt: number | null; stopped: boolean },
): ModelAnswer {
  const { text, model, outcome } = at;
  const timing: ExchangeTiming = {
    model: model.id,
    at: call.at,
    firstTokenMs: at.firstTokenAt === null ? null : Math.round(at.firstTokenAt - at.startedAt),
    durationMs: Math.round(performance.now() - at.startedAt),
    outputTokens: outcome.usage?.completionTokens ?? estimateOutputTokens(text, outcome),
  };
  const input = outcome.usage?.promptTokens ?? call.prompt.reduce((sum, m) => sum + messageTokens(textOf(m.content)), 0);
  return { text, model, outcome, timing, tokens: { input, output: timing.outputTokens, estimated: outcome.usage === undefined }, stopped: at.stopped };
}

interface Begun {
  model: RegisteredModel;
  deadline: Deadline;
  startedAt: number;
  /** A streamed reply: its pieces and the first of them. */
  pieces?: AsyncIterator<StreamPiece>;
  first?: IteratorResult<StreamPiece>;
  /** A whole reply's text. */
  text: string;
}

/** The first model of the chain that begins its reply: a failure before its first token goes to the next. */
async function begin(deps: CallDeps, call: ModelCall, request: Omit<ModelRequest, "signal">, cap: ReturnType<typeof replyCap>): Promise<Begun> {
  for (let i = 0; ; i++) {
    const model = call.chain[i]!;
    const deadline = createDeadline(deps.config.MODEL_TIMEOUT_MS, call.signal);
    const startedAt = performance.now();
    try {
      if (!call.stream) return { model, deadline, startedAt, text: cap.take(fromModel(await model.adapter!.complete({ ...request, signal: deadline.signal }))) };
      const pieces = (await model.adapter!.stream({ ...request, signal: deadline.signal }))[Symbol.asyncIterator]();
      deadline.touch();
      return { model, deadline, startedAt, pieces, first: await pieces.next(), text: "" };
    } catch (err) {
      deadline.clear();
      countUpstreamError(deps, model, err, deadline);
      if (i + 1 < call.chain.length && fallsBack(err, deadline)) {
        deps.log.warn("chat model failed before its first token; its fallback answers", { requestId: call.requestId, model: model.id, fallback: call.chain[i + 1]!.id, err });
        continue;
      }
      throw failure(err, deadline, model);
    }
  }
}

/**
 * Counts a provider's failure for the metrics, by its kind: `timeout`, `credentials` (refused
 * the server's key), `4xx`/`5xx` (an HTTP status), or `transport` (no status: unreachable,
 * broken off, unreadable). A call the client or the person stopped is not the provider's.
 */
function countUpstreamError(deps: CallDeps, model: RegisteredModel, err: unknown, deadline: Deadline): void {
  if (!deadline.timedOut && deadline.signal.aborted) return;
  deps.metrics.upstreamError(model.provider, upstreamErrorKind(err, deadline));
}

function upstreamErrorKind(err: unknown, deadline: Deadline): string {
  if (deadline.timedOut) return "timeout";
  if (!(err instanceof UpstreamError) || err.status === undefined) return "transport";
  if (err.credentialsRejected) return "credentials";
  return `${Math.floor(err.status / 100)}xx`;
}

/** A failure before the first token that the next model of the chain may answer instead: the provider down, a 5xx, a 429, a timeout. */
function fallsBack(err: unknown, deadline: Deadline): boolean {
  if (deadline.timedOut) return true;
  if (deadline.signal.aborted) return false;
  if (!(err instanceof UpstreamError) || err.credentialsRejected) return false;
  return err.status === undefined || err.status === 429 || err.status >= 500;
}

function failure(err: unknown, deadline: Deadline, model: RegisteredModel): ModelCallFailed {
  if (err instanceof ModelCallFailed) return err;
  const why = deadline.timedOut
    ? "timeout"
    : deadline.signal.aborted
      ? "cancelled"
      : err instanceof UpstreamError && err.credentialsRejected
        ? "credentials"
        : "failed";
  return new ModelCallFailed(why, model, { cause: err });
}

/**
 * The model's text as the service passes it on: U+0000 becomes U+FFFD (the replacement
 * character). The embedded libSQL driver reads text back cut at a NUL, so a reply holding
 * one would be stored shorter than it was streamed; replaced here, before it is streamed,
 * returned or stored, all three agree, and every other character passes unchanged.
 */
function fromModel(text: string): string {
  return text.replaceAll("\u0000", "\uFFFD");
}

/** Output tokens when the provider does not count them, tool calls included. */
function estimateOutputTokens(text: string, outcome: ModelOutcome): number {
  return estimateTokens(text + (outcome.toolCalls ?? []).map((c) => c.name + c.arguments).join(""));
}
