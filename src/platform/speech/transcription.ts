import type { Config } from "../config";
import type { WorkersAiBinding } from "../models/workers-ai";

/** The largest recording POST /audio/transcriptions accepts (10 MiB). */
export const MAX_AUDIO_BYTES = 10 * 1024 * 1024;
/** The longest recording it accepts, in seconds. */
export const MAX_AUDIO_SECONDS = 120;

export interface Recording {
  bytes: Uint8Array<ArrayBuffer>;
  /** The media type the client gave, if any. */
  type: string;
  filename: string;
  /** ISO 639-1 hint, passed on. */
  language?: string;
}

/** Turns a recording into text with the configured speech-to-text provider. */
export type Transcriber = (recording: Recording, signal: AbortSignal) => Promise<{
  text: string;
  /** The duration the provider measured, when it says. */
  seconds?: number;
}>;

/** The recording itself is refused: not audio, or longer than the limit. */
export class AudioRejected extends Error {
  override name = "AudioRejected";
}

/** The provider failed or did not answer in time; nothing about the recording is wrong. */
export class TranscriptionFailed extends Error {
  override name = "TranscriptionFailed";
  constructor(
    message: string,
    readonly reason: "failed" | "timeout",
  ) {
    super(message);
  }
}

/** The containers browsers record in (MediaRecorder) and the common upload formats, by their magic bytes. */
export function audioFormat(bytes: Uint8Array): "wav" | "webm" | "ogg" | "mp3" | "flac" | "mp4" | undefined {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes.length < 12) return undefined;
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "wav";
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return "webm";
  if (ascii(0, 4) === "OggS") return "ogg";
  if (ascii(0, 4) === "fLaC") return "flac";
  if (ascii(4, 8) === "ftyp") return "mp4";
  if (ascii(0, 3) === "ID3" || (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0)) return "mp3";
  return undefined;
}

/**
 * A WAV file's duration, exactly, from its chunks: the `data` chunk's size over the `fmt `
 * chunk's byte rate. A streamed WAV whose data size is unknown (0 or 0xFFFFFFFF) counts the
 * bytes that are actually there.
 */
export function wavSeconds(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = String.fromCharCode(...bytes.subarray(at, at + 4));
    const size = view.getUint32(at + 4, true);
    if (id === "fmt " && at + 20 <= bytes.length) byteRate = view.getUint32(at + 16, true);
    if (id === "data") {
      if (!byteRate) throw new AudioRejected("the WAV file has no usable format chunk before its data");
      const available = bytes.length - (at + 8);
      const dataBytes = size === 0 || size === 0xffffffff ? available : Math.min(size, available);
      return dataBytes / byteRate;
    }
    at += 8 + size + (size % 2); // chunks are padded to an even size
  }
  throw new AudioRejected("the WAV file has no data chunk");
}

const tooLong = (seconds: number) =>
  new AudioRejected(`the recording is ${Math.ceil(seconds)} s long; the limit is ${MAX_AUDIO_SECONDS} s`);

/**
 * The text of a recording. The size limit is the caller's (the body is bounded before it is
 * read). The duration limit is checked exactly for WAV before the provider is called; for
 * compressed containers (WebM/Opus, Ogg, MP3, MP4, FLAC) the size limit bounds the work and
 * the provider's own measured duration, when it reports one, is checked afterwards.
 */
export async function transcribe(transcriber: Transcriber, recording: Recording, timeoutMs: number): Promise<string> {
  const format = audioFormat(recording.bytes);
  if (!format) {
    throw new AudioRejected("the file is not an audio recording (WAV, WebM, Ogg, MP3, MP4/M4A or FLAC)");
  }
  if (format === "wav") {
    const seconds = wavSeconds(recording.bytes);
    if (seconds > MAX_AUDIO_SECONDS) throw tooLong(seconds);
  }
  const signal = AbortSignal.timeout(timeoutMs);
  let result: Awaited<ReturnType<Transcriber>>;
  try {
    result = await transcriber(recording, signal);
  } catch (err) {
    if (signal.aborted) throw new TranscriptionFailed(`the speech-to-text provider did not answer within ${timeoutMs / 1000} s`, "timeout");
    throw err;
  }
  if (result.seconds !== undefined && result.seconds > MAX_AUDIO_SECONDS) throw tooLong(result.seconds);
  return result.text;
}

/** An OpenAI-compatible `POST {base}/audio/transcriptions` (OpenAI, Groq, a local Whisper server). */
function openAiTranscriber(baseUrl: string, apiKey: string | undefined, model: string): Transcriber {
  const url = `${baseUrl.replace(/\/+$/, "")}/audio/transcriptions`;
  return async (recording, signal) => {
    const form = new FormData();
    form.set("file", new Blob([recording.bytes], { type: recording.type || "application/octet-stream" }), recording.filename);
    // Always the configured model: the key is the service's, so callers do not pick what it pays for.
    form.set("model", model);
    if (recording.language) form.set("language", recording.language);
    form.set("response_format", "json");
    let res: Response;
    try {
      res = await fetch(url, { method: "POST", body: form, headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {}, signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new TranscriptionFailed("the speech-to-text provider could not be reached", "failed");
    }
    // The provider's own error text may carry internals: only its status is passed on.
    if (!res.ok) {
      await res.body?.cancel();
      if (res.status === 400) throw new AudioRejected("the speech-to-text provider could not read the recording");
      throw new TranscriptionFailed(`the speech-to-text provider failed (HTTP ${res.status})`, "failed");
    }
    const body = (await res.json().catch(() => ({}))) as { text?: unknown; duration?: unknown; usage?: { type?: unknown; seconds?: unknown } };
    if (typeof body.text !== "string") throw new TranscriptionFailed("the speech-to-text provider answered without a transcript", "failed");
    // OpenAI reports `usage: { type: "duration", seconds }`; Whisper servers' verbose replies `duration`.
    const seconds = typeof body.usage?.seconds === "number" ? body.usage.seconds : typeof body.duration === "number" ? body.duration : undefined;
    return { text: body.text.trim(), seconds };
  };
}

/** Workers AI's Whisper (the `AI` binding), which takes the recording as base64. */
function workersAiTranscriber(binding: WorkersAiBinding, model: string): Transcriber {
  return async (recording, signal) => {
    let base64 = "";
    for (let i = 0; i < recording.bytes.length; i += 0x8000) {
      base64 += String.fromCharCode(...recording.bytes.subarray(i, i + 0x8000));
    }
    const inputs: Record<string, unknown> = { audio: btoa(base64) };
    if (recording.language) inputs.language = recording.language;
    let out: { text?: unknown; transcription_info?: { duration?: unknown } };
    try {
      out = (await binding.run(model, inputs, { signal })) as typeof out;
    } catch (err) {
      if (signal.aborted) throw err;
      throw new TranscriptionFailed("Workers AI could not transcribe the recording", "failed");
    }
    if (typeof out?.text !== "string") throw new TranscriptionFailed("Workers AI answered without a transcript", "failed");
    const seconds = out.transcription_info?.duration;
    return { text: out.text.trim(), seconds: typeof seconds === "number" ? seconds : undefined };
  };
}

/** The configured provider: STT_BASE_URL, else (on Workers) the AI binding's Whisper, else none. */
export function createTranscriber(config: Config, workersAi?: WorkersAiBinding): Transcriber | undefined {
  if (config.STT_BASE_URL) return openAiTranscriber(config.STT_BASE_URL, config.STT_API_KEY, config.STT_MODEL);
  if (workersAi) return workersAiTranscriber(workersAi, "@cf/openai/whisper-large-v3-turbo");
  return undefined;
}
