import type { Schemas } from "../api/client";

type Attachment = Schemas["Attachment"];

/**
 * A shared message's files, from the public GET /shared/{token}/attachments/{id}: images as
 * thumbnails that open the whole image, documents by name, type and pages. Kept apart from the
 * chat's views, which fetch with a session's token, so that the share page loads none of the chat's code.
 */
export function SharedAttachments({ token, attachments }: { token: string; attachments: Attachment[] }) {
  const url = (a: Attachment) => `/shared/${encodeURIComponent(token)}/attachments/${encodeURIComponent(a.id)}`;
  return (
    <ul class="message-attachments" aria-label="Attachments">
      {attachments.map((a) => (
        <li key={a.id}>
          {a.kind === "image" ? (
            <a class="image-thumb" href={url(a)} target="_blank" rel="noopener" aria-label={`Open image ${a.name}`}>
              <img src={`${url(a)}?thumbnail=1`} alt={a.name} />
            </a>
          ) : (
            <a class="attachment-chip document" href={`${url(a)}?download=1`}>
              <span class="attachment-name">{a.name}</span>
              <span class="attachment-meta">
                {a.type === "application/pdf" ? "PDF" : a.type}
                {a.pages ? ` · ${a.pages} page${a.pages === 1 ? "" : "s"}` : ""}
              </span>
            </a>
          )}
        </li>
      ))}
    </ul>
  );
}
