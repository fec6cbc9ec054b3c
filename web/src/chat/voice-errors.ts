// What went wrong with dictation, said so a person knows what to do next. Browsers report
// SpeechRecognition errors as codes ("not-allowed") and getUserMedia ones as DOMException names.

const BLOCKED =
  "This site may not use your microphone. To dictate, allow it: click the icon at the left of the address bar " +
  "(site settings), set Microphone to Allow, then press the microphone button again. Or type your message.";

/** The message for a SpeechRecognition error code, or null when there is nothing to say (aborted). */
export function recognitionErrorMessage(code: string): string | null {
  switch (code) {
    case "aborted":
      return null;
    case "not-allowed":
      return BLOCKED;
    case "service-not-allowed":
      return "This browser does not allow speech recognition on this site (its settings or a policy forbid it). Type your message instead.";
    case "no-speech":
      return "Nothing was heard. Press the microphone button and start speaking while it is red.";
    case "audio-capture":
      return "No microphone was found. Connect one, or choose it in your system's sound settings, and try again.";
    case "network":
      return "The browser's speech recognition works online, and its service could not be reached. Check your connection, or type your message.";
    case "language-not-supported":
      return "The browser's speech recognition does not know the language chosen in Settings → Chat. Pick another one there, or type your message.";
    default:
      return "Dictation stopped because the browser's speech recognition failed. Try again, or type your message.";
  }
}

/** The message for a failed getUserMedia (the recording sent to the server's transcription). */
export function microphoneErrorMessage(error: unknown): string {
  const name = error instanceof DOMException ? error.name : "";
  if (name === "NotAllowedError" || name === "SecurityError") return BLOCKED;
  if (name === "NotFoundError" || name === "OverconstrainedError") return recognitionErrorMessage("audio-capture")!;
  if (name === "NotReadableError" || name === "AbortError") {
    return "The microphone could not be started: another program may be using it. Close that program and try again.";
  }
  return "The microphone could not be started. Try again, or type your message.";
}
