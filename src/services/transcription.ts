/** The largest recording POST /audio/transcriptions accepts (10 MiB). */
export const MAX_AUDIO_BYTES = 10 * 1024 * 1024;
/** The longest recording it accepts, in seconds. */
export const MAX_AUDIO_SECONDS = 120;

/** Turns a recording into text with the configured speech-to-text provider. */
export type Transcriber = (audio: { bytes: Uint8Array; type: string; filename: string; model?: string; language?: string }) => Promise<{
  text: string;
  /** The duration the provider measured, when it says. */
  seconds?: number;
}>;
