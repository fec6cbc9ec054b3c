/** One event of a text/event-stream body: its fields as an EventSource parses them. */
export interface SseEvent {
  /** The `event` field; "message" when the event has none. */
  event: string;
  /** The `data` lines, joined with newlines. */
  data: string;
  /** The `id` field, when the event has one. */
  id?: string;
  /** The `retry` field, when the event has one that is a number. */
  retry?: number;
}

/** A text/event-stream body split into its events, as a browser's EventSource would. */
export function parseSse(text: string): SseEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let event = "message";
      const data: string[] = [];
      const extra: { id?: string; retry?: number } = {};
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.startsWith("id:")) extra.id = line.slice(3).replace(/^ /, "");
        else if (/^retry: ?\d+$/.test(line)) extra.retry = Number(line.slice(6));
      }
      return { event, data: data.join("\n"), ...extra };
    });
}
