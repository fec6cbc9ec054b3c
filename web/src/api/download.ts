import { authedFetch, noticeResponse, toApiError } from "./client";

/**
 * Downloads an authenticated file of the API (an export) the way a link with `download`
 * would: the name from its Content-Disposition, saved by the browser. A link cannot carry
 * the session's access token, so the file is fetched and handed over as a blob. `name: "ours"`
 * saves it as `fallbackName` whatever the server calls it.
 */
export async function downloadFile(path: string, fallbackName: string, options: { name?: "server's" | "ours" } = {}): Promise<void> {
  const response = await authedFetch(new Request(path));
  noticeResponse(response);
  if (!response.ok) throw toApiError(response, await response.json().catch(() => null));
  const served = options.name === "ours" ? undefined : /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") ?? "")?.[1];
  const name = served ?? fallbackName;
  const url = URL.createObjectURL(await response.blob());
  const link = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
