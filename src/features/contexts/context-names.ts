/** A context's name from its first message: one line, at most 60 characters, cut at a word with `…`. */
export function contextNameFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  if (line.length <= 60) return line;
  const cut = line.slice(0, 59);
  const space = cut.lastIndexOf(" ");
  return `${(space >= 40 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
