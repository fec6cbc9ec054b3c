import { useState } from "preact/hooks";
import { Dialog } from "../ui/dialog";
import { Icon } from "../ui/icons";
import { formatSize, useAttachmentUrl, type Attachment, type Draft } from "./attachments";
import "./attachments.css";

/** The composer's files before sending: a thumbnail or a chip each, with its size, progress and a remove button. */
export function DraftChips({ drafts, remove }: { drafts: Draft[]; remove: (key: string) => void }) {
  if (drafts.length === 0) return null;
  return (
    <ul class="attachment-drafts" aria-label="Attached files">
      {drafts.map((d) => {
        const state = d.error ? `not attached: ${d.error.message}` : d.uploaded ? "attached" : `uploading, ${Math.round(d.progress * 100)}%`;
        return (
          <li key={d.key} class={`attachment-chip${d.error ? " failed" : ""}`}>
            {d.preview ? <img src={d.preview} alt="" class="attachment-thumb" /> : <Icon name="file" size={18} />}
            <span class="attachment-name">{d.name}</span>
            <span class="attachment-meta">{formatSize(d.size)}</span>
            {!d.uploaded && !d.error && <progress max={1} value={d.progress} aria-label={`Uploading ${d.name}`} />}
            {d.error && <span class="attachment-error">Not attached: {d.error.message}</span>}
            <span class="visually-hidden" role="status">
              {d.name}: {state}
            </span>
            <button type="button" class="icon-button small" aria-label={`Remove ${d.name}`} onClick={() => remove(d.key)}>
              <Icon name="close" size={14} />
            </button>
          </li>
        );
      })}
    </ul>
  );
}

/** A stored message's files: images as thumbnails that open larger, documents as chips with their type and pages. */
export function MessageAttachments({ attachments }: { attachments: Attachment[] }) {
  return (
    <ul class="message-attachments" aria-label="Attachments">
      {attachments.map((a) => (
        <li key={a.id}>{a.kind === "image" ? <ImageThumb attachment={a} /> : <DocumentChip attachment={a} />}</li>
      ))}
    </ul>
  );
}

function ImageThumb({ attachment }: { attachment: Attachment }) {
  const url = useAttachmentUrl(attachment.id);
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" class="image-thumb" aria-label={`Open image ${attachment.name}`} onClick={() => setOpen(true)}>
        {url ? <img src={url} alt={attachment.name} /> : <span class="thumb-placeholder" aria-hidden="true" />}
      </button>
      <Dialog title={attachment.name} open={open} onClose={() => setOpen(false)}>
        {url && <img src={url} alt={attachment.name} class="image-large" />}
        <div class="row-actions">
          <button type="button" class="button small" onClick={() => setOpen(false)}>
            Close
          </button>
        </div>
      </Dialog>
    </>
  );
}

const TYPE_NAMES: Record<string, string> = { "application/pdf": "PDF", "text/markdown": "Markdown", "text/csv": "CSV", "application/json": "JSON", "text/plain": "Text" };

function DocumentChip({ attachment: a }: { attachment: Attachment }) {
  const details = [TYPE_NAMES[a.type] ?? a.type, a.pages ? `${a.pages} page${a.pages === 1 ? "" : "s"}` : null, formatSize(a.size)].filter(Boolean).join(" · ");
  return (
    <span class="attachment-chip document" title={a.name}>
      <Icon name="file" size={18} />
      <span class="attachment-name">{a.name}</span>
      <span class="attachment-meta">{details}</span>
    </span>
  );
}
