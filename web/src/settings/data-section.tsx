import { useQueryClient } from "@tanstack/react-query";
import { useState } from "preact/hooks";
import { Link } from "wouter-preact";
import { authedFetch, noticeResponse, toApiError, type Context, type Schemas } from "../api/client";
import { downloadFile } from "../api/download";
import { plainText } from "../ui/plain-text";

/** The tag an export of the service carries (typed from the API: a change breaks this build). */
const EXPORT_FORMAT: Schemas["ExportDocument"]["format"] = "plant-chat-export";

/** The most an import may be, in bytes (the server's limit). */
const MAX_IMPORT_BYTES = 10 * 1024 * 1024;

/**
 * What is wrong with a file that is neither kind of import, said in the words of this page
 * (the service's own message names its format's internal tag); null when it may be one, and
 * the server checks the rest.
 */
function notAnImport(text: string): string | null {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch {
    return "This file is not JSON: choose an export of Assistant Chat (a .json file) or ChatGPT's conversations.json.";
  }
  const object = file !== null && typeof file === "object" && !Array.isArray(file) ? (file as Record<string, unknown>) : null;
  if (Array.isArray(file) || (object && (object.format === EXPORT_FORMAT || "mapping" in object))) return null;
  return "This file is neither an export of Assistant Chat nor ChatGPT's conversations.json. Choose the file “Export everything” saved, or conversations.json from ChatGPT's data export.";
}

/** Export everything as one JSON file; import an export or ChatGPT's conversations.json. */
export function DataSection() {
  const client = useQueryClient();
  const [exporting, setExporting] = useState(false);
  const [exportError, setExportError] = useState<string | null>(null);
  const [file, setFile] = useState<File | null>(null);
  const [importing, setImporting] = useState(false);
  const [result, setResult] = useState<{ items: Context[]; skipped: number } | { error: string } | null>(null);

  async function exportAll() {
    setExporting(true);
    setExportError(null);
    try {
      // Named for the product people know, whatever the service calls its file.
      await downloadFile("/me/export", `assistant-chat-export-${new Date().toISOString().slice(0, 10)}.json`, { name: "ours" });
    } catch (err) {
      setExportError((err as Error).message);
    } finally {
      setExporting(false);
    }
  }

  async function importFile(e: Event) {
    e.preventDefault();
    if (!file) return;
    setResult(null);
    if (file.size > MAX_IMPORT_BYTES) {
      setResult({ error: `This file is ${(file.size / 1024 / 1024).toFixed(1)} MiB; an import may be at most 10 MiB. Split it and import the parts.` });
      return;
    }
    const text = await file.text();
    const unknown = notAnImport(text);
    if (unknown) {
      setResult({ error: unknown });
      return;
    }
    setImporting(true);
    try {
      const response = await authedFetch(new Request("/contexts/import", { method: "POST", headers: { "Content-Type": "application/json" }, body: text }));
      noticeResponse(response);
      const body = await response.json().catch(() => null);
      if (!response.ok) throw toApiError(response, body);
      setResult(body as { items: Context[]; skipped: number });
      void client.invalidateQueries({ queryKey: ["contexts"] });
      void client.invalidateQueries({ queryKey: ["groups"] });
    } catch (err) {
      setResult({ error: (err as Error).message });
    } finally {
      setImporting(false);
    }
  }

  return (
    <div class="stack wide-stack">
      <section class="card stack" aria-labelledby="export-heading">
        <h2 id="export-heading">Export your data</h2>
        <p class="muted">
          One JSON file with everything you own here: your profile and presets, groups, every conversation with all of its
          branches, share links, API key names (never the keys) and usage. Import it here or on another server.
        </p>
        <div>
          <button type="button" class="button" onClick={() => void exportAll()} disabled={exporting}>
            {exporting ? "Preparing…" : "Export everything"}
          </button>
        </div>
        {exportError && (
          <p role="alert" class="error">
            {exportError}
          </p>
        )}
      </section>

      <form class="card stack" aria-labelledby="import-heading" onSubmit={(e) => void importFile(e)}>
        <h2 id="import-heading">Import conversations</h2>
        <p class="muted">
          An export of this service, or <code>conversations.json</code> from ChatGPT's data export (Settings → Data controls →
          Export). Every branch comes along; nothing is charged; up to 10 MiB at a time. If anything in the file is wrong,
          nothing is imported and you are told what.
        </p>
        <label class="field">
          <span>File to import</span>
          <input type="file" accept="application/json,.json" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <div>
          <button type="submit" class="button primary" disabled={!file || importing}>
            {importing ? "Importing…" : "Import"}
          </button>
        </div>
        {result && "error" in result && (
          <p role="alert" class="error">
            {result.error}
          </p>
        )}
        {result && "items" in result && (
          <div role="status" class="stack">
            <p>
              {result.items.length > 0 || result.skipped === 0
                ? `Imported ${result.items.length} conversation${result.items.length === 1 ? "" : "s"}.`
                : "Nothing new to import."}
              {result.skipped > 0 && ` ${result.skipped} conversation${result.skipped === 1 ? "" : "s"} already here, skipped.`}
            </p>
            <ul class="imported-list">
              {result.items.slice(0, 20).map((c) => (
                <li key={c.id}>
                  <Link href={`/c/${c.id}`}>{plainText(c.name) || c.name}</Link>
                  {c.archived && <span class="muted small"> (archived)</span>}
                </li>
              ))}
            </ul>
          </div>
        )}
      </form>
    </div>
  );
}
