import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, authedFetch, noticeResponse } from "../api/client";
import { useClientConfig } from "../api/client-config";
import { Icon } from "../ui/icons";
import { microphoneErrorMessage, recognitionErrorMessage } from "./voice-errors";

interface SpeechRecognitionLike {
  lang: string;
  interimResults: boolean;
  onresult: ((e: { results: ArrayLike<ArrayLike<{ transcript: string }>> }) => void) | null;
  onerror: ((e: { error: string }) => void) | null;
  onend: (() => void) | null;
  start(): void;
  stop(): void;
}
type SpeechRecognitionCtor = new () => SpeechRecognitionLike;

const browserRecognition = (): SpeechRecognitionCtor | undefined =>
  (window as unknown as { SpeechRecognition?: SpeechRecognitionCtor; webkitSpeechRecognition?: SpeechRecognitionCtor })
    .SpeechRecognition ??
  (window as unknown as { webkitSpeechRecognition?: SpeechRecognitionCtor }).webkitSpeechRecognition;

async function transcribe(audio: Blob, language: string): Promise<string> {
  const form = new FormData();
  const ext = audio.type.includes("ogg") ? "ogg" : audio.type.includes("mp4") ? "m4a" : "webm";
  form.append("file", audio, `recording.${ext}`);
  if (language) form.append("language", language);
  const response = await authedFetch(new Request("/audio/transcriptions", { method: "POST", body: form }));
  noticeResponse(response);
  const body = (await response.json().catch(() => null)) as { text?: string; message?: string } | null;
  if (!response.ok) throw new ApiError(response.status, body?.message ?? `transcription failed (${response.status})`);
  return body?.text ?? "";
}

/**
 * The microphone button: records with MediaRecorder and transcribes on the server when the
 * deployment has a speech-to-text provider, else uses the browser's own recognition where
 * it exists; hidden where neither works. The text lands in the composer for review.
 */
export function VoiceButton(props: { language: string; onTranscript: (text: string) => void; onError: (message: string) => void }) {
  const config = useClientConfig();
  const [state, setState] = useState<"idle" | "recording" | "transcribing">("idle");
  const stopRef = useRef<() => void>(() => {});
  const timerRef = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => stopRef.current(), []);

  const server = config.data?.transcription.available && typeof MediaRecorder !== "undefined" && !!navigator.mediaDevices;
  const Recognition = browserRecognition();
  if (!config.data || (!server && !Recognition)) return null;

  async function startServer() {
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      props.onError(microphoneErrorMessage(err));
      return;
    }
    const recorder = new MediaRecorder(stream);
    const chunks: Blob[] = [];
    recorder.ondataavailable = (e) => e.data.size > 0 && chunks.push(e.data);
    recorder.onstop = async () => {
      clearTimeout(timerRef.current);
      for (const t of stream.getTracks()) t.stop();
      setState("transcribing");
      try {
        const text = await transcribe(new Blob(chunks, { type: recorder.mimeType }), props.language);
        if (text.trim()) props.onTranscript(text.trim());
        else props.onError("Nothing was heard in that recording.");
      } catch (err) {
        props.onError(err instanceof Error ? err.message : String(err));
      } finally {
        setState("idle");
      }
    };
    stopRef.current = () => recorder.state !== "inactive" && recorder.stop();
    recorder.start();
    setState("recording");
    const maxMs = (config.data?.transcription.maxSeconds ?? 60) * 1000;
    timerRef.current = setTimeout(() => stopRef.current(), maxMs);
  }

  function startBrowser() {
    if (!Recognition) return;
    const recognition = new Recognition();
    recognition.lang = props.language || navigator.language;
    recognition.interimResults = false;
    recognition.onresult = (e) => {
      const text = Array.from(e.results)
        .map((r) => r[0]?.transcript ?? "")
        .join(" ")
        .trim();
      if (text) props.onTranscript(text);
    };
    recognition.onerror = (e) => {
      const message = recognitionErrorMessage(e.error);
      if (message) props.onError(message);
    };
    recognition.onend = () => setState("idle");
    stopRef.current = () => recognition.stop();
    recognition.start();
    setState("recording");
  }

  const recording = state === "recording";
  return (
    <button
      type="button"
      class={`icon-button${recording ? " recording" : ""}`}
      aria-label={recording ? "Stop dictation" : state === "transcribing" ? "Transcribing…" : "Dictate a message"}
      aria-pressed={recording}
      disabled={state === "transcribing"}
      onClick={() => (recording ? stopRef.current() : server ? void startServer() : startBrowser())}
    >
      {state === "transcribing" ? <span class="spinner" aria-hidden="true" /> : <Icon name={recording ? "stop" : "mic"} />}
    </button>
  );
}
