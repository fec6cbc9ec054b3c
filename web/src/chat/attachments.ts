import { useEffect, useState } from "preact/hooks";
import { freshToken } from "../auth/session";
import type { Schemas } from "../api/client";

export type Attachment = Schemas["Attachment"];

/** A file in the composer: uploading, uploaded (its id), or refused (why). */
export interface Draft {
  key: string;
  name: string;
  size: number;
  /** A local preview of an image, while it is in the composer. */
  preview?: string;
  progress: number;
  uploaded?: Attachment;
  error?: { code: string; message: string };
}

/** The most files one message carries (the server's limit). */
export const MAX_FILES = 10;

/** A size as people read it. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The composer's files: each uploaded as soon as it is added (POST /attachments, with
 * XMLHttpRequest for its upload progress, which fetch cannot report), removable before
 * sending, cleared once sent.
 */
export function useDrafts() {
  const [drafts, setDrafts] = useState<Draft[]>([]);
  const update = (key: string, change: Partial<Draft>) => setDrafts((list) => list.map((d) => (d.key === key ? { ...d, ...change } : d)));

  function add(files: Iterable<File>) {
    const added = [...files].slice(0, Math.max(0, MAX_FILES - drafts.length));
    for (const file of added) {
      const key = crypto.randomUUID();
      const preview = file.type.startsWith("image/") && file.type !== "image/svg+xml" ? URL.createObjectURL(file) : undefined;
      setDrafts((list) => [...list, { key, name: file.name || "pasted image", size: file.size, preview, progress: 0 }]);
      void upload(file, (progress) => update(key, { progress })).then(
        (uploaded) => update(key, { uploaded, progress: 1 }),
        (error: { code: string; message: string }) => update(key, { error }),
      );
    }
  }
  function remove(key: string) {
    setDrafts((list) => {
      const gone = list.find((d) => d.key === key);
      if (gone?.preview) URL.revokeObjectURL(gone.preview);
      return list.filter((d) => d.key !== key);
    });
  }
  return {
    drafts,
    add,
    remove,
    clear: () =>
      setDrafts((list) => {
        for (const d of list) if (d.preview) URL.revokeObjectURL(d.preview);
        return [];
      }),
    uploading: drafts.some((d) => !d.uploaded && !d.error),
    ids: drafts.flatMap((d) => (d.uploaded ? [d.uploaded.id] : [])),
    hasImages: drafts.some((d) => d.uploaded?.kind === "image"),
  };
}

async function upload(file: File, onProgress: (fraction: number) => void): Promise<Attachment> {
  const token = await freshToken();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/attachments");
    if (token) xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => {
      const body = (() => {
        try {
          return JSON.parse(xhr.responseText) as Record<string, unknown>;
        } catch {
          return {};
        }
      })();
      if (xhr.status === 201) resolve(body as unknown as Attachment);
      else reject({ code: String(body.code ?? "failed"), message: String(body.message ?? `the upload failed (${xhr.status})`) });
    };
    xhr.onerror = () => reject({ code: "network", message: "the upload failed: check the connection and try again" });
    const form = new FormData();
    form.set("file", file, file.name || "pasted-image.png");
    xhr.send(form);
  });
}

/** An attachment's file as a blob URL: GET /attachments/{id} needs the bearer token an <img> cannot send. */
export function useAttachmentUrl(id: string): string | undefined {
  const [url, setUrl] = useState<string>();
  useEffect(() => {
    let made: string | undefined;
    let live = true;
    void (async () => {
      const path = `/attachments/${encodeURIComponent(id)}?thumbnail=1`;
      const token = await freshToken();
      const res = await fetch(path, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
      if (!res.ok || !live) return;
      made = URL.createObjectURL(await res.blob());
      setUrl(made);
    })();
    return () => {
      live = false;
      if (made) URL.revokeObjectURL(made);
    };
  }, [id]);
  return url;
}
