export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** JSON lines on the console: what Workers Logs and any Node log shipper read best. */
export function createLogger(level: LogLevel): Logger {
  const write = (at: LogLevel) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (rank[at] < rank[level]) return;
    const line = JSON.stringify({ level: at, time: new Date().toISOString(), msg, ...serializable(fields) });
    if (at === "error" || at === "warn") console.error(line);
    else console.log(line);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

function serializable(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;
  }
  return out;
}
