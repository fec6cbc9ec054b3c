import { z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../platform/deps";
import { ApiError } from "../../platform/http/errors";
import { createRouter } from "../../platform/http/router";
import { AudioRejected, MAX_AUDIO_BYTES, MAX_AUDIO_SECONDS, transcribe, TranscriptionFailed } from "../../platform/speech/transcription";
import { authenticatedRoute } from "../../platform/http/authenticated-route";
import { errorResponses } from "../../platform/http/error-responses";

const MIB = 1024 * 1024;

// 503 before the body is read: without a provider there is nothing to upload to.
const requireTranscriber = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.get("deps").transcriber) {
    throw new ApiError(
      "speech_to_text_not_configured",
      "speech to text is not configured: set STT_BASE_URL (an OpenAI-compatible …/v1) and STT_API_KEY, or bind Workers AI as AI",
    );
  }
  const type = c.req.header("Content-Type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(type)) {
    throw new ApiError("unsupported_media_type", "send the recording as multipart/form-data with the audio in a field named 'file'");
  }
  await next();
});

// This route's own limit (the app's 1 MiB JSON limit does not apply here): the recording
// plus room for the multipart framing and the small text fields.
const limitAudioBody = bodyLimit({
  maxSize: MAX_AUDIO_BYTES + 64 * 1024,
  onError: () => {
    throw new ApiError("body_too_large", `the recording is over the ${MAX_AUDIO_BYTES / MIB} MiB limit`);
  },
});

const fileMessage = "must be an audio file (the multipart field 'file')";

const TranscriptionForm = z
  .object({
    file: z.instanceof(File, { message: fileMessage }).openapi({ type: "string", format: "binary", description: `At most ${MAX_AUDIO_BYTES / MIB} MiB and ${MAX_AUDIO_SECONDS} s: WAV, WebM/Opus, Ogg, MP3, MP4/M4A or FLAC` }),
    model: z.string().max(100).optional().openapi({ description: "Accepted for OpenAI clients; the service's configured model (STT_MODEL) is used" }),
    language: z
      .string()
      .regex(/^[a-z]{2,3}$/, "must be an ISO 639-1 language code such as en or pt")
      .optional()
      .openapi({ example: "en", description: "The spoken language, as a hint" }),
  })
  .openapi("TranscriptionRequest");

const transcriptionRoute = authenticatedRoute({
  method: "post",
  path: "/audio/transcriptions",
  tags: ["voice"],
  summary: "The text of a short recording (voice input)",
  description:
    "OpenAI's multipart shape. Relayed to the configured speech-to-text provider; costs no credits, " +
    "and counts against the per-user request limit. WAV durations are read from the file; for compressed " +
    "formats the size limit bounds the recording and the provider's measured duration is checked when it reports one.",
  request: { body: { required: true, content: { "multipart/form-data": { schema: TranscriptionForm } } } },
  responses: {
    200: {
      description: "The transcript",
      content: { "application/json": { schema: z.object({ text: z.string() }).openapi("Transcription") } },
    },
    ...errorResponses(400, 401, 413, 415, 502, 503, 504),
  },
}, { middleware: [requireTranscriber, limitAudioBody] });

export const audioRoutes = createRouter().openapi(transcriptionRoute, async (c) => {
  const { file, language } = c.req.valid("form");
  // The body limit covers the whole request; this is the file's own, as documented.
  if (file.size > MAX_AUDIO_BYTES) throw new ApiError("body_too_large", `the recording is over the ${MAX_AUDIO_BYTES / MIB} MiB limit`);
  const recording = { bytes: new Uint8Array(await file.arrayBuffer()), type: file.type, filename: file.name || "audio", language };
  try {
    const text = await transcribe(c.get("deps").transcriber!, recording, c.get("deps").config.MODEL_TIMEOUT_MS);
    return c.json({ text }, 200);
  } catch (err) {
    if (err instanceof AudioRejected) throw new ApiError("invalid_request", err.message);
    if (err instanceof TranscriptionFailed) throw new ApiError(err.reason === "timeout" ? "upstream_timeout" : "upstream_failed", err.message);
    throw err;
  }
});
